package main

import (
	"encoding/json"
	"strings"
	"time"
)

// The Context Contract's Go structs (docs/context-contract.md, section 5), as a receiver
// declares them: what ctxstore builds must decode into these with DisallowUnknownFields.

type ChatMessage struct {
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	TurnID    string    `json:"turn_id"`
	Timestamp time.Time `json:"timestamp"`
}

type ConsultationState struct {
	Stage              string   `json:"stage"`
	ChiefComplaint     *string  `json:"chief_complaint"`
	BodyParts          []string `json:"body_parts"`
	Symptoms           []string `json:"symptoms"`
	Duration           *string  `json:"duration"`
	AggravatingFactors []string `json:"aggravating_factors"`
	PainLevel          *string  `json:"pain_level"`
	Swelling           *bool    `json:"swelling"`
	Trauma             *bool    `json:"trauma"`
	RedFlags           []string `json:"red_flags"`
	MissingSlots       []string `json:"missing_slots"`
	LastQuestion       *string  `json:"last_question"`
	PendingAnswerFor   []string `json:"pending_answer_for"`
}

type KnowledgeItem struct {
	Title          string  `json:"title"`
	Content        string  `json:"content"`
	Source         string  `json:"source"`
	RelevanceScore float64 `json:"relevance_score"`
}

type ContextBundle struct {
	RecentMessages      []ChatMessage          `json:"recent_messages"`
	ConversationSummary *string                `json:"conversation_summary,omitempty"`
	ConsultationState   ConsultationState      `json:"consultation_state"`
	UserProfile         map[string]interface{} `json:"user_profile,omitempty"`
	RetrievedKnowledge  []KnowledgeItem        `json:"retrieved_knowledge,omitempty"`
}

type Meta struct {
	ContextVersion       string `json:"context_version"`
	TokenBudget          int    `json:"token_budget"`
	IncludedMessageCount int    `json:"included_message_count"`
	SummaryVersion       int    `json:"summary_version"`
}

type ContextContract struct {
	SessionID   string        `json:"session_id"`
	TurnID      string        `json:"turn_id"`
	UserMessage string        `json:"user_message"`
	Context     ContextBundle `json:"context"`
	Meta        Meta          `json:"meta"`
}

// The Go service as a sender: no omitempty, so nil slices, maps and pointers are null.

type UserProfile struct {
	Age              int      `json:"age"`
	Gender           string   `json:"gender"`
	ExerciseHabit    string   `json:"exercise_habit"`
	KnownLimitations []string `json:"known_limitations"`
}

type SenderBundle struct {
	RecentMessages      []ChatMessage     `json:"recent_messages"`
	ConversationSummary *string           `json:"conversation_summary"`
	ConsultationState   ConsultationState `json:"consultation_state"`
	UserProfile         *UserProfile      `json:"user_profile"`
	RetrievedKnowledge  []KnowledgeItem   `json:"retrieved_knowledge"`
	PatientMood         string            `json:"patient_mood,omitempty"` // a newer minor's field
}

type SenderContract struct {
	SessionID   string       `json:"session_id"`
	TurnID      string       `json:"turn_id"`
	UserMessage string       `json:"user_message"`
	Context     SenderBundle `json:"context"`
	Meta        Meta         `json:"meta"`
}

type namedContract struct {
	Name string `json:"name"`
	JSON string `json:"json"`
}

func text(s string) *string { return &s }

func senderContracts() ([]namedContract, error) {
	beijing := zone("CST", 8, 0)
	first := SenderContract{ // a first turn: nothing but the greeting state, all lists nil
		SessionID: "sess_go_1", TurnID: "turn_0001", UserMessage: "你好",
		Context: SenderBundle{ConsultationState: ConsultationState{Stage: "greeting"}},
		Meta:    Meta{ContextVersion: "1.0.0", TokenBudget: 8000},
	}
	yes := true
	full := SenderContract{
		SessionID: "sess_go_2", TurnID: "turn_0197", UserMessage: "我膝盖有下坠感",
		Context: SenderBundle{
			RecentMessages: []ChatMessage{
				{"user", "我膝盖有下坠感", "turn_0196", time.Date(2026, 11, 29, 8, 15, 2, 123000000, beijing)},
				{"assistant", "是否伴随疼痛或肿胀？", "turn_0196", time.Time{}}, // never stamped
				{"user", "<b>走路</b> & \u2028", "turn_0197", time.Time{}.In(beijing)},
				{"assistant", "ok", "turn_0197", time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)},
			},
			ConversationSummary: text("用户自述膝盖有下坠感约一周。"),
			ConsultationState: ConsultationState{
				Stage: "collecting_details", ChiefComplaint: text("膝盖下坠感"),
				BodyParts: []string{"膝盖"}, PainLevel: text("moderate"), Swelling: &yes,
			},
			UserProfile:        &UserProfile{Age: 34, Gender: "female"},
			RetrievedKnowledge: []KnowledgeItem{{"膝关节", "前交叉韧带", "kb/knee", 0.92}},
		},
		Meta: Meta{ContextVersion: "1.0.0", TokenBudget: 8000, IncludedMessageCount: 4, SummaryVersion: 1},
	}
	numeric := full
	numeric.SessionID = "sess_go_3"
	numeric.Context.ConsultationState.PainLevel = text("7")
	newer := first
	newer.SessionID = "sess_go_4"
	newer.Context.PatientMood = "anxious"
	newer.Meta.ContextVersion = "1.2.0"
	var out []namedContract
	for _, c := range []struct {
		name     string
		contract SenderContract
	}{{"first-turn", first}, {"full", full}, {"numeric-pain", numeric}, {"newer-minor", newer}} {
		data, err := json.Marshal(c.contract)
		if err != nil {
			return nil, err
		}
		out = append(out, namedContract{c.name, string(data)})
	}
	return out, nil
}

type builtContract = namedContract

type contractResult struct {
	Name    string `json:"name"`
	Problem string `json:"problem"`
	JSON    string `json:"json"`
}

// checkContracts decodes each contract strictly and marshals it again, for the test to
// compare with what ctxstore built.
func checkContracts(built []builtContract) []contractResult {
	var out []contractResult
	for _, b := range built {
		decoder := json.NewDecoder(strings.NewReader(b.JSON))
		decoder.DisallowUnknownFields()
		var contract ContextContract
		result := contractResult{Name: b.Name}
		if err := decoder.Decode(&contract); err != nil {
			result.Problem = err.Error()
		} else if data, err := json.Marshal(contract); err != nil {
			result.Problem = err.Error()
		} else {
			result.JSON = string(data)
		}
		out = append(out, result)
	}
	return out
}
