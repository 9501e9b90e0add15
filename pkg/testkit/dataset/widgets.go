package dataset

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// WidgetGVR is the dataset's custom resource: a namespaced Widget with a status
// subresource.
var WidgetGVR = schema.GroupVersionResource{Group: "bench.cachetune.dev", Version: "v1", Resource: "widgets"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const widgetCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.bench.cachetune.dev", "labels": {"cachetune.dev/dataset": "crd"}},
  "spec": {
    "group": "bench.cachetune.dev",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {
          "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "color": {"type": "string"},
            "replicas": {"type": "integer"},
            "parts": {"type": "array", "items": {"type": "object", "properties": {
              "name": {"type": "string"}, "sku": {"type": "string"}, "note": {"type": "string"}}}}
          }},
          "status": {"type": "object", "properties": {
            "phase": {"type": "string"},
            "observedGeneration": {"type": "integer"},
            "lastHeartbeat": {"type": "string"},
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
          }, "x-kubernetes-preserve-unknown-fields": true}
        }
      }}
    }]
  }
}`

// EnsureWidgetCRD installs the Widget CRD and waits until it is established and
// served.
func EnsureWidgetCRD(ctx context.Context, dyn dynamic.Interface) error {
	_, err := dyn.Resource(crdGVR).Patch(ctx, "widgets.bench.cachetune.dev", types.ApplyPatchType, []byte(widgetCRD), applyOpts())
	if err != nil {
		return fmt.Errorf("install CRD widgets.bench.cachetune.dev: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := dyn.Resource(crdGVR).Get(ctx, "widgets.bench.cachetune.dev", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		if !established {
			return false, nil
		}
		// Established can precede the first successful list by a moment.
		_, err = dyn.Resource(WidgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

func (s *seeder) widget(ctx context.Context, i int) error {
	name := fmt.Sprintf("widget-%05d", i)
	var parts []map[string]any
	for j := 0; len(parts)*96 < s.spec.WidgetBytes; j++ {
		parts = append(parts, map[string]any{
			"name": fmt.Sprintf("part-%03d", j),
			"sku":  fmt.Sprintf("SKU-%08d", i*1000+j),
			"note": "anodised aluminium, 3 mm, batch 2026-11",
		})
	}
	meta := objectMeta(s.spec, name)
	obj := map[string]any{
		"apiVersion": "bench.cachetune.dev/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": s.spec.Namespace, "labels": meta.Labels},
		"spec":       map[string]any{"size": i % 17, "color": []string{"red", "green", "blue"}[i%3], "replicas": 1 + i%5, "parts": parts},
	}
	applied, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	ann := map[string]any{LastAppliedAnnotation: string(applied) + "\n"}
	for k, v := range meta.Annotations {
		ann[k] = v
	}
	obj["metadata"].(map[string]any)["annotations"] = ann
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	res := s.dyn.Resource(WidgetGVR).Namespace(s.spec.Namespace)
	if _, err := res.Patch(ctx, name, types.ApplyPatchType, body, applyOpts()); err != nil {
		return fmt.Errorf("apply widget %s/%s: %w", s.spec.Namespace, name, err)
	}
	status := widgetStatus(s.spec.Namespace, name, s.now, s.now)
	if _, err := res.Patch(ctx, name, types.ApplyPatchType, status, statusOpts(), "status"); err != nil {
		return fmt.Errorf("apply status of widget %s/%s: %w", s.spec.Namespace, name, err)
	}
	return nil
}

// widgetStatus is the status a Widget's controller applies: Ready since
// transition, last seen at heartbeat.
func widgetStatus(namespace, name string, heartbeat, transition time.Time) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"bench.cachetune.dev/v1","kind":"Widget","metadata":{"name":%q,"namespace":%q},"status":{"phase":"Ready","observedGeneration":1,"lastHeartbeat":%q,"conditions":[{"type":"Ready","status":"True","reason":"Assembled","lastTransitionTime":%q}]}}`,
		name, namespace, heartbeat.UTC().Format(time.RFC3339), transition.UTC().Format(time.RFC3339)))
}
