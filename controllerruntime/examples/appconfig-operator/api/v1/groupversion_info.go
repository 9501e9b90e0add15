// Package v1 is the API of the appconfig operator: the AppConfig kind of
// group demo.cachetune.dev, version v1, as a kubebuilder project lays it out.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "demo.cachetune.dev", Version: "v1"}

	// SchemeBuilder registers this API's Go types with a scheme. An API
	// package keeps to apimachinery (controller-runtime's scheme.Builder is
	// deprecated for that reason), so that clients can import it cheaply.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AppConfig{}, &AppConfigList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
