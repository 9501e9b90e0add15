// Package v1 is the API of the appconfig operator: the AppConfig kind of
// group demo.cachetune.dev, version v1, as a kubebuilder project lays it out.
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "demo.cachetune.dev", Version: "v1"}

	// SchemeBuilder registers this API's Go types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
