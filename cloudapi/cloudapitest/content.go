package cloudapitest

import (
	"encoding/json"
	"unicode/utf8"
)

// checkContent is the fake's own reading of what each message type must
// carry (Meta's "Messages" reference), independent of cloudapi's
// validation. It returns "" when obj is acceptable, or why not.
func checkContent(typ string, obj json.RawMessage) string {
	var o map[string]json.RawMessage
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
	if json.Unmarshal(obj, &o) != nil {
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
