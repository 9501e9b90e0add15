package predicate_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/predicate"
)

// A controller that reacts to spec changes and to finalizers, but not to its
// own status writes. In a real controller the handler is registered with
// informer.AddEventHandler(predicate.Handler(p, h)) and the informer calls it.
func ExampleHandler() {
	p := predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged())
	h := predicate.Handler(p, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			fmt.Println("reconcile", newObj.(*corev1.ConfigMap).ResourceVersion)
		},
	})

	v1 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", ResourceVersion: "1", Generation: 1}}
	v2 := v1.DeepCopy() // a status write: same generation
	v2.ResourceVersion = "2"
	v3 := v2.DeepCopy() // a finalizer added
	v3.ResourceVersion, v3.Finalizers = "3", []string{"example.com/cleanup"}
	h.OnUpdate(v1, v2)
	h.OnUpdate(v2, v3)

	fmt.Printf("%s: %+v\n", p.Name(), p.Stats().Update)
	// Output:
	// reconcile 3
	// any(generation,finalizers): {Passed:1 Filtered:1}
}

// A custom predicate from Funcs: only objects carrying a label pass.
func ExampleNew() {
	p := predicate.New("managed", predicate.Funcs{
		Create: func(obj metav1.Object) bool { return obj.GetLabels()["app.kubernetes.io/managed-by"] == "me" },
	})
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	fmt.Println(p.Create(mine), p.Create(other))
	fmt.Printf("%+v\n", p.Stats().Create)
	// Output:
	// true false
	// {Passed:1 Filtered:1}
}
