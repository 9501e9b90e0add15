package encstore

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// TypedJSON returns the codec for typed objects that have no protobuf
// encoding (a custom resource's Go type, as controller-runtime caches them):
// the JSON their API serves, with encoding/json, which every API type's tags
// are written for. newObject returns an empty object of the informer's type.
// It is bigger and slower than Protobuf: use Protobuf when the type has it.
func TypedJSON(newObject func() runtime.Object) Codec { return typedJSON{newObject: newObject} }

type typedJSON struct {
	newObject func() runtime.Object
}

func (c typedJSON) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return dst, fmt.Errorf("encode %T as JSON: %w", obj, err)
	}
	return append(dst, b...), nil
}

func (c typedJSON) Decode(data []byte) (runtime.Object, error) {
	obj := c.newObject()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode %T from JSON: %w", obj, err)
	}
	return obj, nil
}
