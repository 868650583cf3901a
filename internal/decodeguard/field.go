package decodeguard

import (
	"encoding"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// failingField returns the path (such as spec.retention.maxAge) of the
// deepest value of data that does not decode into its field of t, or "" when
// data as a whole is at fault. Decoding errors do not always say: a type's
// own UnmarshalJSON, as metav1.Duration's, returns its error without the
// field, so the path is found by decoding field by field.
func failingField(t reflect.Type, data []byte) string {
	path, _ := locate(t, data, "")
	return path
}

// locate returns the path of the deepest value under path that does not
// decode, and false when data decodes into t.
func locate(t reflect.Type, data []byte, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if utiljson.Unmarshal(data, reflect.New(t).Interface()) == nil {
		return "", false
	}
	if decodesItself(t) {
		return path, true
	}
	for _, c := range children(t, data, path) {
		if p, failed := locate(c.t, c.data, c.path); failed {
			return p, true
		}
	}
	return path, true
}

// decodesItself tells whether a type reads its JSON with its own code,
// which decoding field by field would bypass.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// child is a value inside another, with the type it decodes into.
type child struct {
	t    reflect.Type
	data []byte
	path string
}

// children splits data into the values of its fields, items or entries.
func children(t reflect.Type, data []byte, path string) []child {
	var out []child
	switch t.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if utiljson.Unmarshal(data, &fields) != nil {
			return nil
		}
		for _, f := range jsonFields(t) {
			if v, ok := fields[f.name]; ok {
				out = append(out, child{t: f.t, data: v, path: join(path, f.name)})
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if t.Elem().Kind() == reflect.Uint8 || utiljson.Unmarshal(data, &items) != nil {
			return nil
		}
		for i, v := range items {
			out = append(out, child{t: t.Elem(), data: v, path: path + "[" + strconv.Itoa(i) + "]"})
		}
	case reflect.Map:
		var entries map[string]json.RawMessage
		if utiljson.Unmarshal(data, &entries) != nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			out = append(out, child{t: t.Elem(), data: entries[k], path: join(path, k)})
		}
	}
	return out
}

// field is a struct field as JSON names it.
type field struct {
	name string
	t    reflect.Type
}

// jsonFields lists the JSON fields of a struct type in order, those of
// embedded structs without a name of their own (such as TypeMeta) inlined,
// as encoding/json reads them.
func jsonFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			embedded := f.Type
			if embedded.Kind() == reflect.Pointer {
				embedded = embedded.Elem()
			}
			if embedded.Kind() == reflect.Struct {
				out = append(out, jsonFields(embedded)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, field{name: name, t: f.Type})
	}
	return out
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
