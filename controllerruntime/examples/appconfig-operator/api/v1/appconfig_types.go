package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppConfigSpec is what an application's configuration should be.
type AppConfigSpec struct {
	// Data becomes the data of the ConfigMap the operator renders.
	Data map[string]string `json:"data,omitempty"`
	// SecretName names a Secret in the same namespace that the application
	// also needs. The ConfigMap is rendered only once the Secret exists, and
	// carries the Secret's resourceVersion, so that whatever mounts both rolls
	// when the Secret changes. Only the Secret's metadata is ever read.
	SecretName string `json:"secretName,omitempty"`
}

// Phases of an AppConfig.
const (
	PhaseReady            = "Ready"
	PhaseWaitingForSecret = "WaitingForSecret"
)

// AppConfigStatus is what the operator last did.
type AppConfigStatus struct {
	// Phase is Ready or WaitingForSecret.
	Phase string `json:"phase,omitempty"`
	// ConfigMap is the name of the rendered ConfigMap.
	ConfigMap string `json:"configMap,omitempty"`
	// SecretVersion is the resourceVersion of the Secret the ConfigMap was
	// rendered with.
	SecretVersion string `json:"secretVersion,omitempty"`
	// ObservedGeneration is the generation of the spec last rendered.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// AppConfig renders a ConfigMap for an application from its spec, once the
// Secret it names exists.
type AppConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppConfigSpec   `json:"spec,omitempty"`
	Status AppConfigStatus `json:"status,omitempty"`
}

// AppConfigList is a list of AppConfigs.
type AppConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppConfig `json:"items"`
}
