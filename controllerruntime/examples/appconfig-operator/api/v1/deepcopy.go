package v1

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
)

// The deep copies controller-gen's object generator would write
// (zz_generated.deepcopy.go in a kubebuilder project), by hand: the types are
// small, and the module needs no code generator.

// DeepCopyInto copies s into out.
func (s *AppConfigSpec) DeepCopyInto(out *AppConfigSpec) {
	*out = *s
	out.Data = maps.Clone(s.Data)
}

// DeepCopyInto copies a into out.
func (a *AppConfig) DeepCopyInto(out *AppConfig) {
	*out = *a
	m := a.ObjectMeta
	m.DeepCopyInto(&out.ObjectMeta)
	a.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a copy of a.
func (a *AppConfig) DeepCopy() *AppConfig {
	if a == nil {
		return nil
	}
	out := new(AppConfig)
	a.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (a *AppConfig) DeepCopyObject() runtime.Object { return a.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *AppConfigList) DeepCopyInto(out *AppConfigList) {
	*out = *l
	m := l.ListMeta
	m.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]AppConfig, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *AppConfigList) DeepCopy() *AppConfigList {
	if l == nil {
		return nil
	}
	out := new(AppConfigList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *AppConfigList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
