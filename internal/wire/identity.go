package wire

import "google.golang.org/protobuf/encoding/protowire"

// Identity is what Peek reads of an object: enough to find it in a cache. Its
// fields alias the message and are valid until the decoder reads the next one.
type Identity struct {
	Name, Namespace, UID, ResourceVersion []byte
}

// Peek reads an object message's identity without decoding the object.
func Peek(msg []byte) (id Identity, err error) {
	err = EachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != objMetadataField || typ != protowire.BytesType {
			return nil
		}
		return EachField(v, func(n protowire.Number, t protowire.Type, mv []byte) error {
			if t != protowire.BytesType {
				return nil
			}
			switch n {
			case metaName:
				id.Name = mv
			case metaNamespace:
				id.Namespace = mv
			case metaUID:
				id.UID = mv
			case metaResourceVersion:
				id.ResourceVersion = mv
			}
			return nil
		})
	})
	return id, err
}
