package cloudapitest

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/wapace/wapace/internal/jsonscan"
)

// checkContent is the fake's own reading of what each message type must
// carry (Meta's "Messages" reference), independent of cloudapi's
// validation. It returns "" when obj is acceptable, or why not.
func checkContent(typ string, obj json.RawMessage) string {
	switch typ {
	case "contacts":
		var cards []struct {
			Name struct {
				FormattedName string `json:"formatted_name"`
			} `json:"name"`
		}
		if json.Unmarshal(obj, &cards) != nil || len(cards) == 0 {
			return "contacts must be a non-empty array"
		}
		for _, c := range cards {
			if c.Name.FormattedName == "" {
				return "contacts[].name.formatted_name is required"
			}
		}
		return ""
	}
	// obj is a member of a body already checked to be valid JSON.
	o, err := jsonscan.Object(obj, true)
	if err != nil {
		return typ + " must be an object"
	}
	switch typ {
	case "text":
		var body string
		if json.Unmarshal(o["body"], &body) != nil || body == "" || utf8.RuneCountInString(body) > 4096 {
			return "text.body must hold 1 to 4096 characters"
		}
	case "template":
		var name string
		if json.Unmarshal(o["name"], &name) != nil || name == "" || len(o["language"]) == 0 {
			return "template.name and template.language are required"
		}
	case "image", "video", "document", "audio", "sticker":
		if len(o["id"]) == 0 == (len(o["link"]) == 0) {
			return typ + " needs exactly one of id and link"
		}
		if v, ok := o["voice"]; ok && (typ != "audio" || string(v) != "true" && string(v) != "false") {
			return "voice is a boolean of audio messages"
		}
	case "interactive":
		var t string
		_ = json.Unmarshal(o["type"], &t)
		switch t {
		case "button", "list", "cta_url", "location_request_message", "product", "product_list", "flow", "catalog_message":
		default:
			return "interactive.type is not one Meta knows"
		}
		if len(o["body"]) == 0 || len(o["action"]) == 0 {
			return "interactive.body and interactive.action are required"
		}
		if t == "flow" {
			return checkFlow(o["action"])
		}
	case "location":
		if len(o["latitude"]) == 0 || len(o["longitude"]) == 0 {
			return "location.latitude and location.longitude are required"
		}
	case "reaction":
		if len(o["message_id"]) == 0 {
			return "reaction.message_id is required"
		}
	}
	return ""
}

// checkFlow is the fake's reading of an interactive flow's action (Meta,
// "Sending a Flow"): name "flow", flow_message_version "3", a flow_cta,
// exactly one of flow_id and flow_name, and a first screen to navigate to.
func checkFlow(raw json.RawMessage) string {
	var a struct {
		Name       string `json:"name"`
		Parameters struct {
			Version string `json:"flow_message_version"`
			ID      string `json:"flow_id"`
			FName   string `json:"flow_name"`
			CTA     string `json:"flow_cta"`
			Action  string `json:"flow_action"`
			Mode    string `json:"mode"`
			Payload *struct {
				Screen string `json:"screen"`
			} `json:"flow_action_payload"`
		} `json:"parameters"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Name != "flow" {
		return "interactive.action.name must be flow"
	}
	p := a.Parameters
	switch {
	case p.Version != "3":
		return "flow_message_version must be 3"
	case (p.ID == "") == (p.FName == ""):
		return "exactly one of flow_id and flow_name is required"
	case p.CTA == "" || utf8.RuneCountInString(p.CTA) > 20:
		return "flow_cta must hold 1 to 20 characters"
	case p.Mode != "" && p.Mode != "draft" && p.Mode != "published":
		return "mode must be draft or published"
	case p.Action == "data_exchange":
		if p.Payload != nil {
			return "flow_action_payload is not allowed with data_exchange"
		}
	case p.Action == "" || p.Action == "navigate":
		if p.Payload == nil || p.Payload.Screen == "" {
			return "flow_action_payload.screen is required to navigate"
		}
	default:
		return "flow_action must be navigate or data_exchange"
	}
	return ""
}
