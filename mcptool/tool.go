package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/errcodes"
)

// outcome is what a tool handler decided: a structured value, a one-line
// summary for the model, and whether it is a tool execution error.
type outcome struct {
	summary string
	value   any
	isError bool
}

// addTool registers a tool whose input and output schemas are inferred from
// In and Out, as mcp.AddTool does, but answers arguments that do not match
// the input schema, or that h reports as malformed (*argError), with a
// JSON-RPC invalid-params protocol error: since go-sdk v1.5 mcp.AddTool
// turns schema violations into tool results instead (SEP-1303), and this
// package keeps tool execution errors for business and capacity failures.
// tweak may refine the inferred input schema (enums, bounds).
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, tweak func(*jsonschema.Schema), h func(context.Context, In) (outcome, error)) error {
	in, resolved, err := inputSchema[In](tweak)
	if err != nil {
		return fmt.Errorf("mcptool: %s input schema: %w", t.Name, err)
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		return fmt.Errorf("mcptool: %s output schema: %w", t.Name, err)
	}
	var zero Out
	if st, ok := any(zero).(schemaTweaker); ok {
		st.tweakSchema(out)
	}
	tt := *t
	tt.InputSchema, tt.OutputSchema = in, out
	s.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArgs[In](req.Params.Arguments, resolved)
		if err != nil {
			return nil, invalidParams(err)
		}
		o, err := h(ctx, args)
		var ae *argError
		switch {
		case errors.As(err, &ae):
			return nil, invalidParams(ae)
		case err != nil:
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: o.summary}},
			StructuredContent: o.value,
			IsError:           o.isError,
		}, nil
	})
	return nil
}

// inputSchema infers In's schema, refines it with tweak and resolves it.
func inputSchema[In any](tweak func(*jsonschema.Schema)) (*jsonschema.Schema, *jsonschema.Resolved, error) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, nil, err
	}
	if tweak != nil {
		tweak(in)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		return nil, nil, err
	}
	return in, resolved, nil
}

// decodeArgs validates raw arguments against the schema and decodes them.
func decodeArgs[In any](raw json.RawMessage, resolved *jsonschema.Resolved) (In, error) {
	var in In
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return in, badArgs("arguments are not JSON")
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return in, badArgs("arguments must be an object")
	}
	if rc, ok := any(in).(rawChecker); ok {
		// Rules a schema validator words in its own terms ("oneOf:
		// validated against both <anonymous schema> and ..."), said
		// with the fields' names first.
		if err := rc.checkRaw(obj); err != nil {
			return in, err
		}
	}
	if err := resolved.Validate(generic); err != nil {
		return in, badArgs("%v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, badArgs("%v", err)
	}
	return in, nil
}

// rawChecker is implemented by tool inputs with rules across fields, which
// it checks on the raw arguments before the schema does.
type rawChecker interface {
	checkRaw(args map[string]any) error
}

// schemaTweaker is implemented by tool outputs whose inferred schema it
// refines (required fields, enums).
type schemaTweaker interface{ tweakSchema(s *jsonschema.Schema) }

// invalidParams is the protocol error for malformed arguments. The schema
// validator quotes the values it rejects: phone numbers are masked.
func invalidParams(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errcodes.Sanitize(err.Error())}
}
