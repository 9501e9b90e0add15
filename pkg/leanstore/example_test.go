package leanstore_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

func managedPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "shop",
		Annotations:   map[string]string{leanstore.LastAppliedAnnotation: `{"kind":"Pod"}`, "team": "payments"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}}
}

// A controller written against client-go's interfaces runs unchanged on a
// leanstore factory. (With a fake clientset, which has no REST client to list
// with, leanstore strips through client-go's own informer.)
func ExampleNewSharedInformerFactory() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientset := fake.NewClientset(managedPod("checkout-1"))

	var factory informers.SharedInformerFactory = leanstore.NewSharedInformerFactory(clientset, 0,
		leanstore.WithStripLastApplied())
	lister := factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	pod, _ := lister.Pods("shop").Get("checkout-1")
	fmt.Println("managedFields:", len(pod.ManagedFields))
	fmt.Println("annotations:", pod.Annotations)
	cancel()
	factory.Shutdown()
	// Output:
	// managedFields: 0
	// annotations: map[team:payments]
}

func ExampleNewDynamicSharedInformerFactory() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "bench.cachetune.dev", Version: "v1", Resource: "widgets"}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.cachetune.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "shop",
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}}},
		"spec": map[string]any{"color": "red", "parts": []any{"a", "b"}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "WidgetList"}, widget)

	factory := leanstore.NewDynamicSharedInformerFactory(client, 0,
		leanstore.WithStreamingLists(leanstore.StreamingOff), // fake clients serve no streaming lists
		leanstore.WithPrune(gvr.GroupResource(), func(obj runtime.Object) error {
			unstructured.RemoveNestedField(obj.(*unstructured.Unstructured).Object, "spec", "parts")
			return nil
		}))
	widgets := factory.ForResource(gvr)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	objs, _ := widgets.Lister().ByNamespace("shop").List(labels.Everything())
	w := objs[0].(*unstructured.Unstructured)
	fmt.Println(w.GetName(), "managedFields:", len(w.GetManagedFields()), "spec:", w.Object["spec"])
	cancel()
	factory.Shutdown()
	// Output: w1 managedFields: 0 spec: map[color:red]
}

func ExampleNewMetadataSharedInformerFactory() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	pod := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: managedPod("checkout-1").ObjectMeta,
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, pod)

	factory := leanstore.NewMetadataSharedInformerFactory(client, 0, leanstore.WithStripLastApplied(),
		leanstore.WithStreamingLists(leanstore.StreamingOff)) // fake clients serve no streaming lists
	pods := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	obj, _ := pods.Lister().ByNamespace("shop").Get("checkout-1")
	m := obj.(*metav1.PartialObjectMetadata)
	fmt.Println(m.Name, "managedFields:", len(m.ManagedFields), "annotations:", m.Annotations)
	cancel()
	factory.Shutdown()
	// Output: checkout-1 managedFields: 0 annotations: map[team:payments]
}

// Transform strips a plain client-go informer the same way.
func ExampleTransform() {
	strip := leanstore.Transform(leanstore.WithStripLastApplied())
	obj, _ := strip(managedPod("checkout-1"))
	pod := obj.(*corev1.Pod)
	fmt.Println(len(pod.ManagedFields), pod.Annotations)
	// Output: 0 map[team:payments]
}
