package doctor

import (
	"context"
	"slices"
	"time"

	"k8s.io/client-go/metadata"

	"github.com/cachetune/cachetune/pkg/diagnose"
)

// stuck lists t's metadata and reports the objects Terminating for longer than
// after, oldest first, with their finalizers.
func stuck(ctx context.Context, mc metadata.Interface, t target, namespace string, after time.Duration) ([]Stuck, error) {
	if !t.namespaced {
		namespace = ""
	}
	d, err := diagnose.NewStuckDetector(diagnose.WithThreshold(after), diagnose.WithResource(t.name()))
	if err != nil {
		return nil, err
	}
	found, err := d.List(ctx, mc, t.gvr, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]Stuck, 0, len(found))
	for _, s := range found {
		out = append(out, Stuck{
			Namespace: s.Object.Namespace, Name: s.Object.Name,
			Since: s.DeletionTimestamp.UTC(), AgeSeconds: s.Age.Seconds(),
			Finalizers: slices.Clone(s.Finalizers),
		})
	}
	return out, nil
}
