package reflector

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testPod is leanstore's test Pod: metadata with managedFields and
// annotations, and a spec.
func testPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv,
			Labels:      map[string]string{"app": "shop"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"big":"json"}`, "keep": "me", "tool.example.com/x": "y"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
	}
}
