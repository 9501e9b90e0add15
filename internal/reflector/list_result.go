package reflector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// listResult is a complete list, ready for the reflector, or one page of it.
type listResult struct {
	items  []runtime.Object
	rv     string
	reused int
	// handedOver, when set, is called once the list is handed over: returned
	// to the reflector, or its differences sent (see lister.finish).
	handedOver func()
}

// done records that res was handed over.
func (res listResult) done() {
	if res.handedOver != nil {
		res.handedOver()
	}
}

// objectList is the list handed to the reflector: its items are the objects to
// store, by reference, so that nothing is copied on the way.
type objectList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

// DeepCopyObject copies the list, not its objects: cached objects are read-only.
func (l *objectList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = append([]runtime.Object(nil), l.Items...)
	return &c
}
