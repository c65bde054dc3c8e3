package webhook

import (
	"encoding/json"
	"unicode/utf8"
)

// The decoder splits objects and arrays of a body that json.Valid has
// accepted, so it needs no second validation: splitting is a single pass
// over each level, where encoding/json would validate every level again.

// member is one key and raw value of a JSON object, in document order.
type member struct {
	key   []byte // unescaped
	value []byte
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just after the string starting at b[i]
// (which is '"'), and whether it holds an escape.
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index just after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		j, _ := skipString(b, i)
		return j
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, _ := skipString(b, i)
				if j < 0 {
					return -1
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// splitObject returns the members of the valid JSON object raw, or false.
func splitObject(raw []byte) ([]member, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	out := make([]member, 0, 8)
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return out, true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, false
		}
		end, escaped := skipString(raw, i)
		if end < 0 {
			return nil, false
		}
		key := raw[i+1 : end-1]
		// encoding/json unescapes keys and replaces invalid UTF-8; do as
		// it does, so that keys match what Meta (and every JSON reader)
		// means.
		if escaped || !utf8.Valid(key) {
			var k string
			if json.Unmarshal(raw[i:end], &k) != nil {
				return nil, false
			}
			key = []byte(k)
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend < 0 {
			return nil, false
		}
		out = append(out, member{key: key, value: raw[i:vend]})
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == '}' {
			return out, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
	}
	return nil, false
}

// splitArray returns the elements of the valid JSON array raw, or false.
func splitArray(raw []byte) ([][]byte, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	var out [][]byte
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, true
	}
	for i < len(raw) {
		end := skipValue(raw, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, raw[i:end])
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == ']' {
			return out, true
		}
		if raw[i] != ',' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
	}
	return nil, false
}
