package dataset

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Changes counts what one churn step wrote.
type Changes struct {
	Updated int `json:"updated"`
	Created int `json:"created"`
	Deleted int `json:"deleted"`
}

// Add returns the sum of c and o.
func (c Changes) Add(o Changes) Changes {
	return Changes{Updated: c.Updated + o.Updated, Created: c.Created + o.Created, Deleted: c.Deleted + o.Deleted}
}

// Total is the number of objects written.
func (c Changes) Total() int { return c.Updated + c.Created + c.Deleted }

// CreateDeleteShare is how many objects a churn step creates, and how many it
// deletes, as a share of the objects it updates: a cluster that changed a tenth
// of its Pods while a client was away has also started and stopped some.
const CreateDeleteShare = 0.1

// Churner changes a seeded dataset the way a cluster changes while a client is
// away (a long disconnect, a slow consumer): between a client's watch ending and
// its re-list, Step updates a share of the objects, creates some and deletes
// some. Which objects a step picks depends only on the seed and on the number
// of steps since the last Restore, so that every client measured after a
// Restore meets the same changes. Its methods must not be called concurrently.
type Churner struct {
	s     *seeder
	seed  uint64
	now   time.Time
	steps int // since the last Restore: decides the picks
	epoch int // ever: decides the values written, which never repeat
	gone  map[schema.GroupVersionResource][]int
	extra map[schema.GroupVersionResource][]int
}

// NewChurner returns a Churner for the dataset spec describes, which must have
// been seeded. Writes go through cfg, directly to the server.
func NewChurner(cfg *rest.Config, spec Spec, seed uint64) (*Churner, error) {
	spec.defaults()
	s, err := newSeeder(cfg, spec)
	if err != nil {
		return nil, err
	}
	return &Churner{
		s: s, seed: seed, now: time.Now(),
		gone:  map[schema.GroupVersionResource][]int{},
		extra: map[schema.GroupVersionResource][]int{},
	}, nil
}

// PlanChanges returns the changes Step(gvr, fraction) makes to a resource with n
// seeded objects: fraction of them updated and CreateDeleteShare as many
// created and deleted.
func PlanChanges(n int, fraction float64) Changes {
	u := int(math.Round(fraction * float64(n)))
	d := min(int(math.Round(float64(u)*CreateDeleteShare)), n)
	return Changes{Updated: min(u, n-d), Created: d, Deleted: d}
}

// Step changes fraction (0 to 1) of the seeded objects of gvr: it deletes some
// (see PlanChanges), updates others in the way their kind changes on a live cluster (a
// Pod's readiness, a Node's heartbeat, a ConfigMap's or Secret's check stamp, a
// Widget's status), all through the manager that wrote that part, so that
// managedFields keep their shape, and creates new objects like the seeded ones.
// It returns once the API server's watch cache holds every change, so that a
// list served from the cache sees them all.
func (c *Churner) Step(ctx context.Context, gvr schema.GroupVersionResource, fraction float64) (Changes, error) {
	if fraction < 0 || fraction > 1 || math.IsNaN(fraction) {
		return Changes{}, fmt.Errorf("churn fraction must be between 0 and 1, got %v", fraction)
	}
	n := c.s.spec.Count(gvr)
	k, ok := c.kind(gvr)
	if !ok || n == 0 {
		return Changes{}, fmt.Errorf("dataset %s has no %s to change", c.s.spec.Name, gvr.Resource)
	}
	c.steps++
	c.epoch++
	plan := PlanChanges(n, fraction)
	if plan.Total() == 0 {
		return plan, nil
	}
	rng := rand.New(rand.NewPCG(c.seed, uint64(c.steps)<<16|uint64(slices.Index(cleanOrder, gvr))))
	var dels, ups []int
	for _, i := range rng.Perm(n) {
		switch {
		case slices.Contains(c.gone[gvr], i):
		case len(dels) < plan.Deleted:
			dels = append(dels, i)
		case len(ups) < plan.Updated:
			ups = append(ups, i)
		}
	}
	first := n + len(c.extra[gvr])
	at := c.now.Truncate(time.Second).Add(time.Duration(c.epoch) * time.Second)
	conc := c.s.spec.Concurrency
	got := Changes{}
	err := parallel(ctx, gvr.Resource, len(dels), conc, nil, func(ctx context.Context, j int) error {
		return c.delete(ctx, gvr, dels[j])
	})
	if err != nil {
		return got, err
	}
	c.gone[gvr] = append(c.gone[gvr], dels...)
	got.Deleted = len(dels)
	err = parallel(ctx, gvr.Resource, len(ups), conc, nil, func(ctx context.Context, j int) error {
		return c.update(ctx, gvr, ups[j], at)
	})
	if err != nil {
		return got, err
	}
	got.Updated = len(ups)
	err = parallel(ctx, gvr.Resource, plan.Created, conc, nil, func(ctx context.Context, j int) error {
		return k.create(ctx, first+j)
	})
	if err != nil {
		return got, err
	}
	for j := range plan.Created {
		c.extra[gvr] = append(c.extra[gvr], first+j)
	}
	got.Created = plan.Created
	return got, c.waitForCache(ctx, gvr)
}

// Restore deletes the objects the steps since the last Restore created and
// writes again those they deleted, and makes the next steps pick what the
// first ones picked. Updated objects keep their last values, which have the
// same size as the seeded ones.
func (c *Churner) Restore(ctx context.Context) error {
	conc := c.s.spec.Concurrency
	for _, gvr := range cleanOrder {
		extra, gone := c.extra[gvr], c.gone[gvr]
		if err := parallel(ctx, gvr.Resource, len(extra), conc, nil, func(ctx context.Context, j int) error {
			return c.delete(ctx, gvr, extra[j])
		}); err != nil {
			return fmt.Errorf("restore %s: %w", gvr.Resource, err)
		}
		k, _ := c.kind(gvr)
		if err := parallel(ctx, gvr.Resource, len(gone), conc, nil, func(ctx context.Context, j int) error {
			return k.create(ctx, gone[j])
		}); err != nil {
			return fmt.Errorf("restore %s: %w", gvr.Resource, err)
		}
		if len(extra)+len(gone) > 0 {
			if err := c.waitForCache(ctx, gvr); err != nil {
				return err
			}
		}
	}
	c.steps = 0
	clear(c.gone)
	clear(c.extra)
	return nil
}

func (c *Churner) kind(gvr schema.GroupVersionResource) (kind, bool) {
	for _, k := range c.s.kinds() {
		if k.gvr == gvr {
			return k, true
		}
	}
	return kind{}, false
}

// name is the name of object i of a kind, as the seeder writes it.
func (c *Churner) name(gvr schema.GroupVersionResource, i int) string {
	spec := c.s.spec
	switch gvr {
	case PodsGVR:
		return podSpec(spec.Namespace, spec.Name, i, spec.PodEnv, spec.PodShape).Name
	case ConfigMapsGVR:
		return fmt.Sprintf("config-%05d", i)
	case SecretsGVR:
		return fmt.Sprintf("bundle-%05d", i)
	case NodesGVR:
		return nodeName(spec.Namespace, i)
	}
	return fmt.Sprintf("widget-%05d", i)
}

func (c *Churner) resource(gvr schema.GroupVersionResource) dynamic.ResourceInterface {
	if ClusterScoped(gvr) {
		return c.s.dyn.Resource(gvr)
	}
	return c.s.dyn.Resource(gvr).Namespace(c.s.spec.Namespace)
}

// delete deletes object i at once (a Pod without a grace period: there is no
// kubelet to confirm it).
func (c *Churner) delete(ctx context.Context, gvr schema.GroupVersionResource, i int) error {
	name := c.name(gvr, i)
	grace := int64(0)
	if err := c.resource(gvr).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return fmt.Errorf("delete %s %s: %w", gvr.Resource, name, err)
	}
	return nil
}

// update changes object i the way its kind changes on a live cluster, through
// the manager that owns the field, writing the time at.
func (c *Churner) update(ctx context.Context, gvr schema.GroupVersionResource, i int, at time.Time) error {
	name := c.name(gvr, i)
	stamp := at.UTC().Format(time.RFC3339)
	var err error
	switch gvr {
	case PodsGVR:
		// A readiness flap, written by the kubelet's manager.
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","lastTransitionTime":%q}]}}`, stamp)
		_, err = c.s.pcs.CoreV1().Pods(c.s.spec.Namespace).Patch(ctx, name, types.StrategicMergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: StatusManager}, "status")
	case NodesGVR:
		// A heartbeat.
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":%q}]}}`, stamp)
		_, err = c.s.pcs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: StatusManager}, "status")
	case ConfigMapsGVR:
		err = labelAsSecondManager(ctx, c.s, c.s.cs.CoreV1().ConfigMaps(c.s.spec.Namespace).Patch, "configmap", name, at)
	case SecretsGVR:
		err = labelAsSecondManager(ctx, c.s, c.s.cs.CoreV1().Secrets(c.s.spec.Namespace).Patch, "secret", name, at)
	case WidgetGVR:
		_, err = c.resource(gvr).Patch(ctx, name, types.ApplyPatchType, widgetStatus(c.s.spec.Namespace, name, at, c.s.now), statusOpts(), "status")
	default:
		return fmt.Errorf("dataset: no update for %s", gvr.Resource)
	}
	if err != nil {
		return fmt.Errorf("update %s %s: %w", gvr.Resource, name, err)
	}
	return nil
}

// waitForCache returns once the watch cache holds every write made so far: a
// consistent list (no resourceVersion) served from the cache waits until the
// cache has caught up with the storage.
func (c *Churner) waitForCache(ctx context.Context, gvr schema.GroupVersionResource) error {
	sel := LabelDataset + "=" + c.s.spec.Name
	if ClusterScoped(gvr) {
		sel += "," + LabelNamespace + "=" + c.s.spec.Namespace
	}
	if _, err := c.resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1}); err != nil {
		return fmt.Errorf("list %s after changing them: %w", gvr.Resource, err)
	}
	return nil
}
