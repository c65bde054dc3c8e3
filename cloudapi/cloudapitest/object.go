package cloudapitest

import (
	"encoding/json"
)

// decodeObject decodes a JSON object into its members, as json.Unmarshal
// into a map[string]json.RawMessage does (the last of duplicate keys wins;
// null is a nil map), but without reflection and with each value a slice
// of data rather than a copy: data must not change while the map is used.
// valid says data is already known to be valid JSON. Keys with escapes or
// beyond ASCII, and anything but an object, go to json.Unmarshal.
func decodeObject(data []byte, valid bool) (map[string]json.RawMessage, error) {
	if !valid && !json.Valid(data) {
		var m map[string]json.RawMessage
		return m, json.Unmarshal(data, &m) // its error
	}
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return slowObject(data)
	}
	m := make(map[string]json.RawMessage, 8)
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		return m, nil
	}
	for {
		// data is valid JSON: a key, a colon, a value, then , or }.
		end := i + 1
		for data[end] != '"' {
			if data[end] == '\\' || data[end] >= 0x80 {
				return slowObject(data)
			}
			end++
		}
		key := string(data[i+1 : end])
		i = skipSpace(data, end+1) + 1 // past the colon
		i = skipSpace(data, i)
		vEnd := skipValue(data, i)
		m[key] = data[i:vEnd:vEnd]
		i = skipSpace(data, vEnd)
		if data[i] == '}' {
			return m, nil
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

// slowObject is decodeObject by json.Unmarshal.
func slowObject(data []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(data, &m)
	return m, err
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at i.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a number or a literal
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i // the end of a number or a literal
			}
		}
	}
	return i
}
