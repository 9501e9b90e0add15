package resilience

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// ClientGoConfigMaps is plain client-go: a typed (protobuf) ConfigMaps
// informer from a SharedInformerFactory, without resync. It is the baseline
// every cachetune informer is compared with.
func ClientGoConfigMaps(cfg *rest.Config, namespace string) (cache.SharedIndexInformer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	return f.Core().V1().ConfigMaps().Informer(), nil
}
