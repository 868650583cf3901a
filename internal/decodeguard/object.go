package decodeguard

import (
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Rejection describes an object the guard kept from the client.
type Rejection struct {
	GroupVersionKind schema.GroupVersionKind
	Namespace        string
	Name             string
	UID              types.UID
	ResourceVersion  string
	// Field is the path of the value that fails to decode, such as
	// spec.retention.maxAge; empty when no single field can be named.
	Field string
	// Err is the decoding error.
	Err error
}

// ObjectReference refers to the rejected object, for an Event.
func (r Rejection) ObjectReference() *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion:      r.GroupVersionKind.GroupVersion().String(),
		Kind:            r.GroupVersionKind.Kind,
		Namespace:       r.Namespace,
		Name:            r.Name,
		UID:             r.UID,
		ResourceVersion: r.ResourceVersion,
	}
}

// checkObject decodes an object as client-go decodes the object of a watch
// event: into the type its apiVersion and kind name. It returns the
// object's rejection when that fails, and nil for objects of other groups
// and of kinds the scheme does not know, which are not the guard's to judge.
func (g *Guard) checkObject(data []byte) *Rejection {
	gvk := kindOf(data)
	if gvk.Group != g.group || !g.scheme.Recognizes(gvk) {
		return nil
	}
	obj, err := g.scheme.New(gvk)
	if err != nil {
		return nil
	}
	if _, _, err := g.decoder.Decode(data, &gvk, obj); err != nil {
		return newRejection(gvk, reflect.TypeOf(obj), data, err)
	}
	return nil
}

// checkItem decodes a list item as client-go decodes the items of a list:
// into the list's item type t, whatever kind the item says it is.
func checkItem(data []byte, t reflect.Type, gvk schema.GroupVersionKind) *Rejection {
	if err := utiljson.Unmarshal(data, reflect.New(t).Interface()); err != nil {
		return newRejection(gvk, t, data, err)
	}
	return nil
}

func newRejection(gvk schema.GroupVersionKind, t reflect.Type, data []byte, err error) *Rejection {
	id := readIdentity(data)
	return &Rejection{
		GroupVersionKind: gvk,
		Namespace:        id.Namespace,
		Name:             id.Name,
		UID:              types.UID(id.UID),
		ResourceVersion:  id.ResourceVersion,
		Field:            failingField(t, data),
		Err:              err,
	}
}

// kindOf returns the kind an object says it is.
func kindOf(data []byte) schema.GroupVersionKind {
	found, err := jsonserializer.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	return *found
}

// identity is the metadata that names an object.
type identity struct {
	Name, Namespace, UID, ResourceVersion string
}

// readIdentity reads an object's identity leniently: a metadata field of
// the wrong type is left empty rather than losing the others.
func readIdentity(data []byte) identity {
	var obj struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	_ = utiljson.Unmarshal(data, &obj)
	str := func(key string) string {
		var s string
		_ = utiljson.Unmarshal(obj.Metadata[key], &s)
		return s
	}
	return identity{Name: str("name"), Namespace: str("namespace"), UID: str("uid"), ResourceVersion: str("resourceVersion")}
}

// tombstone returns what a deletion of the object carries: its kind and its
// metadata. Labels and owner references stay when the metadata decodes, so
// that handlers mapping the object to others still can; otherwise only the
// identity is kept.
func tombstone(gvk schema.GroupVersionKind, data []byte) ([]byte, error) {
	var obj struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	var metadata any
	if utiljson.Unmarshal(data, &obj) == nil && obj.Metadata != nil && utiljson.Unmarshal(obj.Metadata, &metav1.ObjectMeta{}) == nil {
		metadata = obj.Metadata
	} else {
		id := readIdentity(data)
		metadata = metav1.ObjectMeta{Name: id.Name, Namespace: id.Namespace, UID: types.UID(id.UID), ResourceVersion: id.ResourceVersion}
	}
	out, err := json.Marshal(map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   metadata,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the tombstone of a %s: %w", gvk.Kind, err)
	}
	return out, nil
}
