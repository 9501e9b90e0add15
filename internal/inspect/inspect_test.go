package inspect

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

var coreV1 = schema.GroupVersion{Version: "v1"}

// NewFunc reads what a client-go informer lists from its own list function:
// namespace, resource, selectors, and its indexers.
func TestNewFuncReadsTheRequest(t *testing.T) {
	newFunc := func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(cs, "team-a", resync,
			cache.Indexers{"byNode": func(any) ([]string, error) { return nil, nil }},
			func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = "app=web", "spec.nodeName=n1" })
	}
	req, idx, err := NewFunc(newFunc, 0, coreV1)
	if err != nil {
		t.Fatal(err)
	}
	want := Request{Namespace: "team-a", Resource: "pods", LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"}
	if req != want {
		t.Errorf("request %+v, want %+v", req, want)
	}
	if _, ok := idx["byNode"]; !ok {
		t.Errorf("indexers %v, want byNode", idx)
	}
}

// An informer of another group version than the caller's type is refused.
func TestNewFuncRefusesAnotherGroupVersion(t *testing.T) {
	newFunc := func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return appsinformers.NewDeploymentInformer(cs, "", resync, cache.Indexers{})
	}
	_, _, err := NewFunc(newFunc, 0, coreV1)
	if err == nil || !strings.Contains(err.Error(), "apps/v1") {
		t.Errorf("err = %v, want one naming apps/v1", err)
	}
}
