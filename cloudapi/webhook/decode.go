package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/wapace/wapace/errcodes"
)

// FieldError reports one webhook field that did not fit its typed field: a
// number where an object was expected, an error object without a code, an
// array element that is not an object. The rest of the item it belongs to is
// delivered all the same, and the field's raw JSON stays in the item's Extra.
// It never quotes the value, which may hold personal data.
type FieldError struct {
	// Path locates the field in the notification, such as
	// "entry[0].changes[1].value.messages[2].timestamp".
	Path string
	// Reason says what was wrong, such as "want a string, got an object".
	Reason string
}

// Error returns "webhook: field <path>: <reason>".
func (e *FieldError) Error() string { return "webhook: field " + e.Path + ": " + e.Reason }

// decoder decodes webhook JSON leniently into the webhook types: a field
// that does not fit becomes a FieldError and its raw JSON is kept in the
// enclosing value's Extra, so that nothing Meta sent is lost.
type decoder struct {
	problems []*FieldError
	stack    []pathElem // the path to the value being decoded
}

func (d *decoder) fail(reason string) {
	d.problems = append(d.problems, &FieldError{Path: d.path(), Reason: reason})
}

// pathElem is one step of the path to the value being decoded: a member
// name, or an array index when key is "".
type pathElem struct {
	key   string
	index int
}

// path renders the decoder's current path, such as
// "entry[0].changes[1].value.messages[2].timestamp". Decoding a well-formed
// body never calls it, so it builds no strings.
func (d *decoder) path() string {
	var b strings.Builder
	for _, e := range d.stack {
		if e.key == "" {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.key)
	}
	return b.String()
}

func (d *decoder) push(key string, index int) { d.stack = append(d.stack, pathElem{key, index}) }
func (d *decoder) pop()                       { d.stack = d.stack[:len(d.stack)-1] }

// structInfo maps JSON keys to the fields of a webhook type.
type structInfo struct {
	keys   map[string]fieldInfo
	order  []fieldInfo // in declaration order, for encoding
	extra  int         // index of the Extra field, or -1
	probIx int         // index of the Problems field, or -1
}

type fieldInfo struct {
	key       string
	index     int
	omitEmpty bool
}

var structInfos sync.Map // reflect.Type -> *structInfo

func infoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{keys: map[string]fieldInfo{}, extra: -1, probIx: -1}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		switch f.Name {
		case "Extra":
			si.extra = i
			continue
		case "Problems":
			si.probIx = i
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" || tag == "" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fi := fieldInfo{key: name, index: i, omitEmpty: strings.Contains(opts, "omitempty")}
		si.keys[name] = fi
		si.order = append(si.order, fi)
	}
	v, _ := structInfos.LoadOrStore(t, si)
	return v.(*structInfo)
}

var errorType = reflect.TypeFor[errcodes.Error]()

// object decodes raw, which should be a JSON object, into the struct v.
// Keys without a typed field, and keys whose value did not fit its field
// exactly, are kept raw in v's Extra. It reports whether raw was an object.
func (d *decoder) object(raw json.RawMessage, v reflect.Value) bool {
	members, ok := splitObject(raw)
	if !ok {
		d.fail("want an object, got " + kindOf(raw))
		return false
	}
	si := infoOf(v.Type())
	var extra map[string]json.RawMessage
	keep := func(k string, r json.RawMessage) {
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[k] = r
	}
	before := len(d.problems)
	for _, m := range members {
		fi, ok := si.keys[string(m.key)]
		if !ok {
			keep(string(m.key), m.value)
			continue
		}
		f := v.Field(fi.index)
		f.SetZero() // a repeated key: the last one wins, as in encoding/json
		delete(extra, fi.key)
		d.push(fi.key, 0)
		exact := d.value(m.value, f)
		d.pop()
		if !exact || f.IsZero() {
			keep(fi.key, m.value)
		}
	}
	if si.extra >= 0 && extra != nil {
		v.Field(si.extra).Set(reflect.ValueOf(extra))
	}
	if si.probIx >= 0 && len(d.problems) > before {
		v.Field(si.probIx).Set(reflect.ValueOf(slices.Clone(d.problems[before:])))
	}
	return true
}

// value decodes raw into v leniently and reports whether it fitted exactly
// (no problem, no conversion such as a number read into a string).
func (d *decoder) value(raw json.RawMessage, v reflect.Value) bool {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return true
	}
	if v.Type() == errorType {
		e, err := errcodes.ParseWebhook(raw)
		if err != nil {
			var pe *errcodes.ParseError
			reason := "not a Graph API error object"
			if errors.As(err, &pe) {
				reason = pe.Reason
			}
			d.fail(reason)
			return false
		}
		v.Set(reflect.ValueOf(*e))
		return false // an Error keeps fewer keys than Meta sends: keep it raw too
	}
	switch v.Kind() {
	case reflect.String:
		switch {
		case len(raw) >= 2 && raw[0] == '"' && plainString(raw[1:len(raw)-1]):
			v.SetString(string(raw[1 : len(raw)-1]))
			return true
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if json.Unmarshal(raw, &s) != nil {
				d.fail("invalid string")
				return false
			}
			v.SetString(s)
			return true
		case isNumber(raw):
			// Meta documents numeric strings (timestamps, IDs); other
			// senders send numbers. Keep the digits as sent.
			v.SetString(string(raw))
			return false
		}
		d.fail("want a string, got " + kindOf(raw))
		return false
	case reflect.Bool:
		switch string(raw) {
		case "true", `"true"`:
			v.SetBool(true)
			return raw[0] != '"'
		case "false", `"false"`:
			v.SetBool(false)
			return raw[0] != '"'
		}
		d.fail("want a boolean, got " + kindOf(raw))
		return false
	case reflect.Int, reflect.Int64:
		s, quoted := unquoteNumber(raw)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			d.fail("want an integer, got " + kindOf(raw))
			return false
		}
		v.SetInt(n)
		return !quoted
	case reflect.Float64:
		s, quoted := unquoteNumber(raw)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			d.fail("want a number, got " + kindOf(raw))
			return false
		}
		v.SetFloat(f)
		return !quoted
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		exact := d.value(raw, elem.Elem())
		if v.Type().Elem().Kind() == reflect.Struct && (len(raw) == 0 || raw[0] != '{') && v.Type().Elem() != errorType {
			return false // not an object: leave the pointer nil
		}
		v.Set(elem)
		return exact
	case reflect.Struct:
		// A nested struct keeps its own Extra: the parent need not keep it.
		return d.object(raw, v)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes(slices.Clone(raw))
			return true
		}
		elems, ok := splitArray(raw)
		if !ok {
			d.fail("want an array, got " + kindOf(raw))
			return false
		}
		out := reflect.MakeSlice(v.Type(), 0, len(elems))
		exact := true
		for i, e := range elems {
			e = bytes.TrimSpace(e)
			ev := reflect.New(v.Type().Elem()).Elem()
			d.push("", i)
			if !d.value(e, ev) {
				exact = false
			}
			d.pop()
			if ev.Kind() == reflect.Struct && ev.Type() != errorType && (len(e) == 0 || e[0] != '{') {
				continue // an element that is not an object: reported, kept raw
			}
			if ev.Type() == errorType && ev.IsZero() {
				continue // an unreadable error object: reported, kept raw
			}
			out = reflect.Append(out, ev)
		}
		v.Set(out)
		return exact
	case reflect.Map:
		p := reflect.New(v.Type())
		if json.Unmarshal(raw, p.Interface()) != nil {
			d.fail("want an object, got " + kindOf(raw))
			return false
		}
		v.Set(p.Elem())
		return true
	}
	p := reflect.New(v.Type())
	if json.Unmarshal(raw, p.Interface()) != nil {
		d.fail("unexpected " + kindOf(raw))
		return false
	}
	v.Set(p.Elem())
	return true
}

// plainString reports whether the inside of a JSON string needs no
// unescaping or UTF-8 repair: no backslash, no control byte, valid UTF-8.
func plainString(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c < 0x20 || c == '"' {
			return false
		}
	}
	return utf8.Valid(b)
}

func isNumber(raw []byte) bool {
	if len(raw) == 0 || !(raw[0] == '-' || ('0' <= raw[0] && raw[0] <= '9')) {
		return false
	}
	var n json.Number
	return json.Unmarshal(raw, &n) == nil
}

// unquoteNumber returns the text of a JSON number, or of a string holding
// one, and whether it was quoted.
func unquoteNumber(raw []byte) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", true
		}
		return strings.TrimSpace(s), true
	}
	if !isNumber(raw) {
		return "", false
	}
	return string(raw), false
}

// kindOf names the JSON kind of raw, for error reasons that never quote it.
func kindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if isNumber(raw) {
		return "a number"
	}
	return "invalid JSON"
}

// encodeObject encodes the struct v as a JSON object: its typed fields, then
// every key kept raw in its Extra (which wins over the typed field, since it
// holds the value exactly as Meta sent it). Keys are sorted.
func encodeObject(v reflect.Value) ([]byte, error) {
	si := infoOf(v.Type())
	var extra map[string]json.RawMessage
	if si.extra >= 0 {
		extra, _ = v.Field(si.extra).Interface().(map[string]json.RawMessage)
	}
	out := make(map[string]json.RawMessage, len(si.order)+len(extra))
	for _, fi := range si.order {
		if _, ok := extra[fi.key]; ok {
			continue
		}
		f := v.Field(fi.index)
		if fi.omitEmpty && f.IsZero() {
			continue
		}
		b, err := json.Marshal(f.Interface())
		if err != nil {
			return nil, err
		}
		out[fi.key] = b
	}
	for k, r := range extra {
		out[k] = r
	}
	return json.Marshal(out)
}
