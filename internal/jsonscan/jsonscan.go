// Package jsonscan reads JSON without reflection where encoding/json would
// cost more than the job: a cursor over a body for readers of one expected
// shape (cloudapi's success bodies, which fall back to encoding/json for
// anything else), and Object, which splits an object into its raw members
// (cloudapitest's request bodies). Both are tested, and fuzzed, against
// encoding/json as the model.
package jsonscan

import "encoding/json"

// Scanner is a cursor over B at I. Its methods read plain JSON strings
// (printable ASCII without escapes: anything else is for encoding/json)
// and punctuation, and never read past B.
type Scanner struct {
	B []byte
	I int
}

// Peek returns the byte at the cursor, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Byte reports whether the byte at the cursor is c, and steps past it if so.
func (s *Scanner) Byte(c byte) bool {
	if s.Peek() == c {
		s.I++
		return true
	}
	return false
}

// Space steps past JSON white space.
func (s *Scanner) Space() { s.I = Space(s.B, s.I) }

// SpaceThen steps past white space and reports whether something follows.
func (s *Scanner) SpaceThen() bool {
	s.Space()
	return s.I < len(s.B)
}

// String reads a string of printable ASCII without escapes, quotes
// included, and returns its content; ok is false (the cursor then stands
// anywhere) for anything else.
func (s *Scanner) String() (v string, ok bool) {
	if !s.Byte('"') {
		return "", false
	}
	start := s.I
	for ; s.I < len(s.B); s.I++ {
		switch c := s.B[s.I]; {
		case c == '"':
			v := string(s.B[start:s.I])
			s.I++
			return v, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", false
		}
	}
	return "", false
}

// Member reads an object member's key (a String) and its colon, and the
// space around them.
func (s *Scanner) Member() (key string, ok bool) {
	k, ok := s.String()
	if !ok {
		return "", false
	}
	s.Space()
	if !s.Byte(':') {
		return "", false
	}
	s.Space()
	return k, true
}

// Space returns the index of the first byte at or after i in data that is
// not JSON white space (len(data) if none).
func Space(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// SkipValue returns the end of the JSON value starting at i in data, which
// must be valid JSON (see json.Valid): it only counts brackets and skips
// strings.
func SkipValue(data []byte, i int) int {
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

// Object decodes a JSON object into its members, as json.Unmarshal into a
// map[string]json.RawMessage does (the last of duplicate keys wins; null
// is a nil map; the same errors), but without reflection and with each
// value a slice of data rather than a copy: data must not change while the
// map is used. valid says data is already known to be valid JSON. Keys
// with escapes or beyond ASCII, and anything but an object, go to
// json.Unmarshal.
func Object(data []byte, valid bool) (map[string]json.RawMessage, error) {
	if !valid && !json.Valid(data) {
		var m map[string]json.RawMessage
		return m, json.Unmarshal(data, &m) // its error
	}
	i := Space(data, 0)
	if i == len(data) || data[i] != '{' {
		return slowObject(data)
	}
	m := make(map[string]json.RawMessage, 8)
	i = Space(data, i+1)
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
		i = Space(data, end+1) + 1 // past the colon
		i = Space(data, i)
		vEnd := SkipValue(data, i)
		m[key] = data[i:vEnd:vEnd]
		i = Space(data, vEnd)
		if data[i] == '}' {
			return m, nil
		}
		i = Space(data, i+1) // past the comma
	}
}

// slowObject is Object by json.Unmarshal.
func slowObject(data []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(data, &m)
	return m, err
}
