package cloudapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

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

// Error returns "cloudapi: webhook field <path>: <reason>".
func (e *FieldError) Error() string { return "cloudapi: webhook field " + e.Path + ": " + e.Reason }

// decoder decodes webhook JSON leniently into the webhook types: a field
// that does not fit becomes a FieldError and its raw JSON is kept in the
// enclosing value's Extra, so that nothing Meta sent is lost.
type decoder struct {
	problems []*FieldError
}

func (d *decoder) fail(path, reason string) {
	d.problems = append(d.problems, &FieldError{Path: strings.TrimPrefix(path, "."), Reason: reason})
}

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
func (d *decoder) object(raw json.RawMessage, path string, v reflect.Value) bool {
	var m map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		d.fail(path, "want an object, got "+kindOf(raw))
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
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := m[k]
		fi, ok := si.keys[k]
		if !ok {
			keep(k, r)
			continue
		}
		f := v.Field(fi.index)
		exact := d.value(r, path+"."+k, f)
		if !exact || f.IsZero() {
			keep(k, r)
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
func (d *decoder) value(raw json.RawMessage, path string, v reflect.Value) bool {
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
			d.fail(path, reason)
			return false
		}
		v.Set(reflect.ValueOf(*e))
		return false // an Error keeps fewer keys than Meta sends: keep it raw too
	}
	switch v.Kind() {
	case reflect.String:
		switch {
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if json.Unmarshal(raw, &s) != nil {
				d.fail(path, "invalid string")
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
		d.fail(path, "want a string, got "+kindOf(raw))
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
		d.fail(path, "want a boolean, got "+kindOf(raw))
		return false
	case reflect.Int, reflect.Int64:
		s, quoted := unquoteNumber(raw)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			d.fail(path, "want an integer, got "+kindOf(raw))
			return false
		}
		v.SetInt(n)
		return !quoted
	case reflect.Float64:
		s, quoted := unquoteNumber(raw)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			d.fail(path, "want a number, got "+kindOf(raw))
			return false
		}
		v.SetFloat(f)
		return !quoted
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		exact := d.value(raw, path, elem.Elem())
		if v.Type().Elem().Kind() == reflect.Struct && (len(raw) == 0 || raw[0] != '{') && v.Type().Elem() != errorType {
			return false // not an object: leave the pointer nil
		}
		v.Set(elem)
		return exact
	case reflect.Struct:
		// A nested struct keeps its own Extra: the parent need not keep it.
		return d.object(raw, path, v)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes(slices.Clone(raw))
			return true
		}
		var elems []json.RawMessage
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
			d.fail(path, "want an array, got "+kindOf(raw))
			return false
		}
		out := reflect.MakeSlice(v.Type(), 0, len(elems))
		exact := true
		for i, e := range elems {
			e = bytes.TrimSpace(e)
			ev := reflect.New(v.Type().Elem()).Elem()
			p := path + "[" + strconv.Itoa(i) + "]"
			if !d.value(e, p, ev) {
				exact = false
			}
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
			d.fail(path, "want an object, got "+kindOf(raw))
			return false
		}
		v.Set(p.Elem())
		return true
	}
	p := reflect.New(v.Type())
	if json.Unmarshal(raw, p.Interface()) != nil {
		d.fail(path, "unexpected "+kindOf(raw))
		return false
	}
	v.Set(p.Elem())
	return true
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
