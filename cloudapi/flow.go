package cloudapi

import "strings"

// Flow is what an interactive flow message opens: a WhatsApp Flow, named
// by ID or by name, the button that opens it, and how it starts (Meta,
// "Sending a Flow").
type Flow struct {
	// ID is the flow's ID; set exactly one of ID and Name.
	ID string
	// Name is the flow's name; set exactly one of ID and Name.
	Name string
	// CTA is the text of the button that opens the flow: 1 to 20
	// characters, no emoji.
	CTA string
	// Token identifies this flow's session in the user's answers
	// (flow_token). Empty sends none: Meta then uses "unused".
	Token string
	// DataExchange starts the flow with a request to the business's flow
	// endpoint (flow_action "data_exchange"). Otherwise the flow opens on
	// Screen (flow_action "navigate").
	DataExchange bool
	// Screen is the first screen's ID, required unless DataExchange.
	Screen string
	// Data is the first screen's input data: nil, or a non-empty object.
	// Not allowed with DataExchange (the endpoint supplies it).
	Data map[string]any
	// Draft sends the flow's draft version (mode "draft"), for testing;
	// otherwise the published one.
	Draft bool
}

// Limits of a flow message, from Meta's "Sending a Flow" reference.
const (
	maxFlowCTA = 20
	// flowMessageVersion is the only flow_message_version Meta accepts.
	flowMessageVersion = "3"
)

type flowAction struct {
	Name       string         `json:"name"`
	Parameters flowParameters `json:"parameters"`
}

type flowParameters struct {
	FlowMessageVersion string             `json:"flow_message_version"`
	FlowToken          string             `json:"flow_token,omitempty"`
	FlowID             string             `json:"flow_id,omitempty"`
	FlowName           string             `json:"flow_name,omitempty"`
	FlowCTA            string             `json:"flow_cta"`
	FlowAction         string             `json:"flow_action"`
	Mode               string             `json:"mode,omitempty"`
	FlowActionPayload  *flowActionPayload `json:"flow_action_payload,omitempty"`
}

type flowActionPayload struct {
	Screen string         `json:"screen"`
	Data   map[string]any `json:"data,omitempty"`
}

// FlowMessage is an interactive flow message: a body of 1 to 1,024
// characters and a button that opens f. It takes a text header and a
// footer (WithHeader, WithFooter). Validate checks what Meta documents: one
// of flow ID and name, the button's text (1 to 20 characters, no emoji), a
// first screen unless the flow starts with a data exchange, and input
// data that is a non-empty object when given, and only for navigate.
func FlowMessage(to, body string, f Flow) Message {
	p := interactivePayload{Type: "flow"}
	p.Body.Text = body
	params := flowParameters{FlowMessageVersion: flowMessageVersion, FlowToken: f.Token, FlowID: f.ID, FlowName: f.Name,
		FlowCTA: f.CTA, FlowAction: "navigate"}
	if f.Draft {
		params.Mode = "draft"
	}
	if f.DataExchange {
		params.FlowAction = "data_exchange"
	} else {
		params.FlowActionPayload = &flowActionPayload{Screen: f.Screen, Data: f.Data}
	}
	p.Action = flowAction{Name: "flow", Parameters: params}
	m := Message{to: to, kind: KindInteractive, payload: p}
	m.err = validateFlow(body, f)
	return m
}

func validateFlow(body string, f Flow) error {
	const prefix = "interactive.action.parameters."
	if err := checkText("interactive.body.text", body, true, 1024); err != nil {
		return err
	}
	switch {
	case (f.ID == "") == (f.Name == ""):
		return invalid(prefix+"flow_id", "set exactly one of flow ID and flow name")
	case f.ID != "" && !isDigits(f.ID):
		return invalid(prefix+"flow_id", "must be digits")
	}
	if err := checkText(prefix+"flow_name", f.Name, false, 512); err != nil {
		return err
	}
	if err := checkText(prefix+"flow_cta", f.CTA, true, maxFlowCTA); err != nil {
		return err
	}
	if strings.ContainsFunc(f.CTA, isEmoji) {
		return invalid(prefix+"flow_cta", "emoji are not supported")
	}
	if err := checkText(prefix+"flow_token", f.Token, false, 1024); err != nil {
		return err
	}
	switch {
	case f.DataExchange && (f.Screen != "" || f.Data != nil):
		return invalid(prefix+"flow_action_payload", "a data_exchange flow takes no screen or data: the flow endpoint supplies them")
	case !f.DataExchange && strings.TrimSpace(f.Screen) == "":
		return invalid(prefix+"flow_action_payload.screen", "required to navigate to the first screen")
	case f.Data != nil && len(f.Data) == 0:
		return invalid(prefix+"flow_action_payload.data", "must be a non-empty object when given")
	}
	return checkText(prefix+"flow_action_payload.screen", f.Screen, false, 512)
}

// isEmoji reports whether r is an emoji or emoji presentation mark: the
// pictographic blocks (including regional indicators), miscellaneous
// symbols and dingbats, the technical symbols that render as emoji (watch,
// hourglass, ...), the emoji variation selector and the zero-width joiner
// that builds emoji sequences. Symbols such as (TM) or arrows are not.
func isEmoji(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF, r >= 0x2600 && r <= 0x27BF, r >= 0x2B00 && r <= 0x2BFF,
		r >= 0x231A && r <= 0x23FF, r == 0xFE0F, r == 0x200D:
		return true
	}
	return false
}

// FlowButtonAction is the "action" parameter of a template's flow button:
// the flow's token and the first screen's input data.
type FlowButtonAction struct {
	// FlowToken identifies the flow's session in the user's answers; empty
	// sends none ("unused").
	FlowToken string `json:"flow_token,omitempty"`
	// FlowActionData is the first screen's input data: nil, or a non-empty
	// object.
	FlowActionData map[string]any `json:"flow_action_data,omitempty"`
}

// FlowButton fills the flow button at index of a template that has one
// (Meta's "Send a message template with a Flow"): the session's token and
// the first screen's input data (nil for none).
func FlowButton(index int, token string, data map[string]any) Component {
	return Component{Type: "button", SubType: "flow", Index: &index,
		Parameters: []Parameter{{Type: "action", Action: &FlowButtonAction{FlowToken: token, FlowActionData: data}}}}
}

func validateFlowButtonAction(field string, c Component, a *FlowButtonAction) error {
	switch {
	case c.Type != "button" || c.SubType != "flow":
		return invalid(field, "an action parameter belongs to a flow button")
	case a == nil:
		return invalid(field, "missing")
	case a.FlowActionData != nil && len(a.FlowActionData) == 0:
		return invalid(field+".flow_action_data", "must be a non-empty object when given")
	}
	return checkText(field+".flow_token", a.FlowToken, false, 1024)
}
