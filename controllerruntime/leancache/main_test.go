package leancache_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cachetune/cachetune/controllerruntime/internal/testenv"
)

var (
	env *envtest.Environment
	cfg *rest.Config
)

// One envtest for the package, on the locally built binaries.
func TestMain(m *testing.M) {
	// What an operator's main does: leancache's informers log through it.
	ctrllog.SetLogger(funcr.New(ctrlLog.write, funcr.Options{}))
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		env = &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}}
		var err error
		if cfg, err = testenv.Start(ctx, env); err != nil {
			fmt.Fprintln(os.Stderr, "start envtest:", err)
			return 1
		}
		defer func() {
			if err := env.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stop envtest:", err)
			}
		}()
		return m.Run()
	}())
}

// Gadget is a custom resource with Go types of its own, as an operator's API
// package declares them: served as JSON only, decoded into these types.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec `json:"spec,omitempty"`
}

// GadgetSpec is a Gadget's desired state.
type GadgetSpec struct {
	Color string `json:"color,omitempty"`
	Size  int64  `json:"size,omitempty"`
}

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	out := *g
	m := g.ObjectMeta
	m.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	out := *l
	m := l.ListMeta
	m.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Gadget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Gadget)
	}
	return &out
}

var gadgetGV = schema.GroupVersion{Group: "test.cachetune.dev", Version: "v1"}

// newScheme is client-go's types plus Gadget, as a manager's scheme.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(gadgetGV, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, gadgetGV)
	return s
}

func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.test.cachetune.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetGV.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"color": {Type: "string"},
							"size":  {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
}
