// Command interop plays the Go service against ctxstore (tests/interop/test_go_interop.py).
//
// It writes sessions and Context Contracts exactly as the Go service does, with
// encoding/json and Go structs, and reads back what ctxstore writes with the same structs.
// Standard library only.
//
//	interop sessions         stdout: every session as Go marshals it, with what ctxstore should load
//	interop check-sessions   stdin: [{"key","variant","value"}] that ctxstore wrote; each is
//	                         read with its struct and compared with what Go reads from its own JSON
//	interop contracts        stdout: contracts marshalled from the Go sender's structs
//	interop check-contracts  stdin: [{"name","json"}] that ctxstore built; each is decoded with
//	                         DisallowUnknownFields and marshalled again
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: interop sessions|check-sessions|contracts|check-contracts"))
	}
	var out interface{}
	var err error
	switch os.Args[1] {
	case "sessions":
		out, err = allSessions()
	case "check-sessions":
		var written []writtenSession
		if err = readInput(&written); err == nil {
			out, err = checkSessions(written)
		}
	case "contracts":
		out, err = senderContracts()
	case "check-contracts":
		var built []builtContract
		if err = readInput(&built); err == nil {
			out = checkContracts(built)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(out); err != nil {
		fail(err)
	}
}

func readInput(into interface{}) error {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "interop:", err)
	os.Exit(2)
}
