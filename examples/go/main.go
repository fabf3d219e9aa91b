// Command consult plays one consultation turn against ctxstore's HTTP service, the way
// the Go backend does: read the session's version, get the Context Contract for the
// user's new message, call the LLM (a stand-in here), then append the turn and update
// the consultation state, each write conditional on the version it read (If-Match).
// A write that finds the version moved on (412) starts the turn again from the read.
//
// Standard library only.
//
//	CTXSTORE_TOKEN=ctx_... go run . -url http://127.0.0.1:8080 -session s1 -user u1 \
//	    -turn 1 -message "我膝盖有下坠感"
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Message is a message as ctxstore stores it.
type Message struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	TurnID    string         `json:"turn_id,omitempty"`
	Timestamp string         `json:"timestamp,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ContextContract is the part of the Context Contract this client reads.
type ContextContract struct {
	SessionID   string `json:"session_id"`
	TurnID      string `json:"turn_id"`
	UserMessage string `json:"user_message"`
	Context     struct {
		RecentMessages      []Message      `json:"recent_messages"`
		ConversationSummary *string        `json:"conversation_summary"`
		ConsultationState   map[string]any `json:"consultation_state"`
		UserProfile         map[string]any `json:"user_profile"`
	} `json:"context"`
	Meta struct {
		ContextVersion       string `json:"context_version"`
		TokenBudget          int    `json:"token_budget"`
		IncludedMessageCount int    `json:"included_message_count"`
		SummaryVersion       int    `json:"summary_version"`
	} `json:"meta"`
}

// Problem is an RFC 9457 problem details body.
type Problem struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail"`
	CurrentVersion *int   `json:"current_version"`
}

// errMoved: a conditional write found the resource at another version (412).
var errMoved = errors.New("the version moved on")

type client struct {
	base  string
	token string
	http  *http.Client
}

// do sends one request; the response's status, ETag and body (problems become errors,
// 412 wraps errMoved).
func (c *client) do(method, path string, body any, headers map[string]string, okStatus ...int) (int, string, []byte, error) {
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return 0, "", nil, err
		}
		reader = bytes.NewReader(encoded)
	}
	request, err := http.NewRequest(method, c.base+path, reader)
	if err != nil {
		return 0, "", nil, err
	}
	request.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		request.Header.Set("Content-Type", "application/json")
	}
	for name, value := range headers {
		request.Header.Set(name, value)
	}
	response, err := c.http.Do(request)
	if err != nil {
		return 0, "", nil, err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	if err != nil {
		return 0, "", nil, err
	}
	etag := response.Header.Get("ETag")
	for _, status := range okStatus {
		if response.StatusCode == status {
			return response.StatusCode, etag, data, nil
		}
	}
	var problem Problem
	if strings.HasPrefix(response.Header.Get("Content-Type"), "application/problem+json") &&
		json.Unmarshal(data, &problem) == nil {
		err = fmt.Errorf("%s %s: %d %s: %s", method, path, problem.Status, problem.Type, problem.Detail)
		if response.StatusCode == http.StatusPreconditionFailed {
			err = fmt.Errorf("%w (%v)", errMoved, err)
		}
		return response.StatusCode, etag, data, err
	}
	return response.StatusCode, etag, data, fmt.Errorf("%s %s: unexpected %d", method, path, response.StatusCode)
}

// condition is the precondition of a write on what was read: If-Match the version,
// or If-None-Match: * when there was nothing (create only).
func condition(etag string) map[string]string {
	if etag == "" {
		return map[string]string{"If-None-Match": "*"}
	}
	return map[string]string{"If-Match": etag}
}

// turn plays one turn; its summary line.
func (c *client) turn(session, user string, number int, text string) (string, error) {
	sessionPath := "/v1/sessions/" + url.PathEscape(session)
	zone := time.FixedZone("CST", 8*3600)
	turnID := fmt.Sprintf("turn_%04d", number)
	for attempt := 1; attempt <= 3; attempt++ {
		// 1. The session's version (404: a new consultation).
		status, etag, _, err := c.do("GET", sessionPath+"/messages", nil, nil, 200, 404)
		if err != nil {
			return "", err
		}
		if status == 404 {
			etag = ""
		}
		// 2. The Context Contract for the new message.
		request := map[string]any{
			"turn_id":      turnID,
			"user_message": text,
			"token_budget": 2000,
			"retrieved_knowledge": []map[string]any{{
				"title":           "膝关节不稳的常见原因",
				"content":         "膝盖打软或下坠感常见于前交叉韧带损伤、半月板损伤或股四头肌无力。",
				"source":          "rehab-kb/knee/instability",
				"relevance_score": 0.92,
			}},
		}
		_, _, data, err := c.do("POST", sessionPath+"/context", request, nil, 200)
		if err != nil {
			return "", err
		}
		var contract ContextContract
		if err := json.Unmarshal(data, &contract); err != nil {
			return "", fmt.Errorf("the contract: %w", err)
		}
		if contract.Meta.ContextVersion[:2] != "1." {
			return "", fmt.Errorf("context_version %s: this client reads 1.x", contract.Meta.ContextVersion)
		}
		// 3. The LLM call (a stand-in: the real one gets the contract as its input).
		// Timestamps to the microsecond: what ctxstore keeps (it refuses finer ones
		// rather than change them).
		asked := stamp(zone)
		answer := fmt.Sprintf("（第%d轮）这种情况持续多久了？有没有肿胀？", number)
		// 4. The turn, appended only onto the version the contract was built from.
		messages := map[string]any{
			"user_id": user,
			"messages": []Message{
				{Role: "user", Content: text, TurnID: turnID, Timestamp: asked},
				{Role: "assistant", Content: answer, TurnID: turnID, Timestamp: stamp(zone),
					Metadata: map[string]any{"model": "stand-in"}},
			},
		}
		_, newTag, _, err := c.do("POST", sessionPath+"/messages", messages, condition(etag), 200, 201)
		if errors.Is(err, errMoved) {
			fmt.Printf("turn %d: %v; building the turn again\n", number, err)
			continue
		}
		if err != nil {
			return "", err
		}
		// 5. The consultation state, read-modify-write under its own version.
		stateTag, err := c.updateState(sessionPath, answer)
		if err != nil {
			return "", err
		}
		// 6. A re-read with the new version: 304, nothing sent again.
		status, _, _, err = c.do("GET", sessionPath+"/messages", nil, map[string]string{"If-None-Match": newTag}, 304)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("turn %d ok: session %s, state %s, %d messages in the contract, re-read %d",
			number, newTag, stateTag, contract.Meta.IncludedMessageCount, status), nil
	}
	return "", fmt.Errorf("turn %d: the session kept moving; gave up after 3 attempts", number)
}

// stamp is the time now in zone, RFC 3339 to the microsecond.
func stamp(zone *time.Location) string {
	return time.Now().In(zone).Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

func (c *client) updateState(sessionPath, question string) (string, error) {
	for attempt := 1; attempt <= 3; attempt++ {
		status, etag, data, err := c.do("GET", sessionPath+"/state", nil, nil, 200, 404)
		if err != nil {
			return "", err
		}
		state := map[string]any{"stage": "greeting"}
		if status == 404 {
			etag = ""
		} else if err := json.Unmarshal(data, &state); err != nil {
			return "", err
		}
		state["stage"] = "collecting_details"
		state["last_question"] = question
		_, newTag, _, err := c.do("PUT", sessionPath+"/state", state, condition(etag), 200, 201)
		if errors.Is(err, errMoved) {
			continue
		}
		return newTag, err
	}
	return "", errors.New("the state kept moving; gave up after 3 attempts")
}

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the service's base URL")
	session := flag.String("session", "go-example", "session id")
	user := flag.String("user", "go-user", "user id")
	number := flag.Int("turn", 1, "turn number")
	text := flag.String("message", "我膝盖有下坠感", "the user's message")
	flag.Parse()
	token := os.Getenv("CTXSTORE_TOKEN")
	if token == "" {
		fmt.Fprintln(os.Stderr, "set CTXSTORE_TOKEN to a token with the read and write scopes")
		os.Exit(2)
	}
	c := &client{base: strings.TrimRight(*base, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}
	line, err := c.turn(*session, *user, *number, *text)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consult:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}
