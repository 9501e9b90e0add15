package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// LabelDataset marks every object the generator creates; its value is the
	// dataset name, so Clean deletes exactly what Seed created.
	LabelDataset = "cachetune.dev/dataset"
	// ApplyManager is the field manager that creates objects with server-side apply.
	ApplyManager = "cachetune-apply"
	// StatusManager is the second field manager: it writes Pod and Widget status
	// through the status subresource and labels ConfigMaps and Secrets.
	StatusManager = "cachetune-status"
	// LastAppliedAnnotation is kubectl's client-side apply annotation.
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// Spec describes a dataset. Counts of zero create nothing of that kind.
type Spec struct {
	// Name labels every object (LabelDataset); default "standard".
	Name string
	// Namespace receives the namespaced objects; it is created when missing.
	Namespace string

	Pods int
	// PodEnv is the number of literal env vars in a Pod's main container (its
	// sidecar gets a half, its init container a third); 0 means 4, about 20 KB
	// of JSON per Pod.
	PodEnv int
	// PodShape says how much Pods have in common; "" means PodsByWorkload.
	PodShape PodShape

	ConfigMaps int
	// ConfigMapBytes is the data size of each ConfigMap; 0 means 4 KiB.
	ConfigMapBytes int

	Secrets int
	// SecretBytes is the data size of each Secret; 0 means 256 KiB (large).
	SecretBytes int

	// Nodes are cluster-scoped, registered as a kubelet would register them
	// and labelled with the namespace (LabelNamespace) as well as the dataset.
	// Seed them only into a test server: on a real cluster a scheduler would
	// place Pods on them and a node controller would taint them.
	Nodes int

	Widgets int
	// WidgetBytes is the spec size of each Widget custom resource; 0 means 2 KiB.
	WidgetBytes int

	// Concurrency is the number of parallel writers; 0 means 16.
	Concurrency int
	// Progress, when set, is called after each object is written, never
	// concurrently, with Done counting up to Total (see ProgressPrinter).
	Progress func(Progress)
}

// LabelNamespace marks cluster-scoped objects (Nodes) with the namespace of
// the dataset they belong to, so that datasets in different namespaces of one
// server do not share them and Clean finds them.
const LabelNamespace = "cachetune.dev/namespace"

// Standard is the dataset cachebench runs by default: 10,000 Pods.
func Standard(namespace string) Spec {
	return Spec{Name: "standard", Namespace: namespace, Pods: 10000}
}

// Mixed is what a typical controller's whole cache holds in a cluster with the
// given number of Pods: per 10,000 Pods, 2,000 ConfigMaps of 4 KiB, 1,000
// Secrets of 8 KiB (certificates and credentials rather than release bundles),
// 100 Nodes (100 Pods each, near the kubelet's default limit of 110) and 500
// custom resources (Widgets of 2 KiB). The ratios are a judgement, not a
// survey: change the counts to match a cluster of your own.
func Mixed(namespace string, pods int) Spec {
	per := func(n int) int { return max(1, pods*n/10000) }
	return Spec{
		Name: "mixed", Namespace: namespace, Pods: pods,
		ConfigMaps: per(2000), ConfigMapBytes: 4 << 10,
		Secrets: per(1000), SecretBytes: 8 << 10,
		Nodes:   per(100),
		Widgets: per(500), WidgetBytes: 2 << 10,
	}
}

// Progress reports how far seeding or cleaning has come.
type Progress struct {
	Kind    string // "pods", "configmaps", "secrets", "nodes", "widgets"
	Done    int
	Total   int
	Elapsed time.Duration
}

// WithDefaults returns s with every zero setting that has a default (Name,
// PodEnv, PodShape, the byte sizes, Concurrency) set to it, as Seed applies
// them: the one place the defaults live, for flags that show them.
func (s Spec) WithDefaults() Spec {
	s.defaults()
	return s
}

func (s *Spec) defaults() {
	if s.Name == "" {
		s.Name = "standard"
	}
	if s.PodEnv == 0 {
		s.PodEnv = 4
	}
	if s.PodShape == "" {
		s.PodShape = PodsByWorkload
	}
	if s.ConfigMapBytes == 0 {
		s.ConfigMapBytes = 4 << 10
	}
	if s.SecretBytes == 0 {
		s.SecretBytes = 256 << 10
	}
	if s.WidgetBytes == 0 {
		s.WidgetBytes = 2 << 10
	}
	if s.Concurrency == 0 {
		s.Concurrency = 16
	}
}

// Count returns the spec's count of a resource of the dataset, 0 for others.
func (s Spec) Count(gvr schema.GroupVersionResource) int {
	switch gvr {
	case PodsGVR:
		return s.Pods
	case ConfigMapsGVR:
		return s.ConfigMaps
	case SecretsGVR:
		return s.Secrets
	case NodesGVR:
		return s.Nodes
	case WidgetGVR:
		return s.Widgets
	}
	return 0
}

// Seed creates the dataset. Each object gets managedFields from two managers,
// as on a live cluster: Pods are created the way a ReplicaSet controller
// creates them (ApplyManager) and their status written the way a kubelet
// writes it (StatusManager), both as protobuf; Nodes likewise; ConfigMaps,
// Secrets and Widgets are server-side applied by ApplyManager and then
// labelled or given a status by StatusManager. Seeding an existing dataset
// again re-applies the applied kinds and leaves existing Pods and Nodes as
// they are.
func Seed(ctx context.Context, cfg *rest.Config, spec Spec) error {
	return Extend(ctx, cfg, spec, Spec{})
}

// Extend grows a dataset seeded with the counts of have to the counts of spec,
// writing only the objects have does not count: object i of a kind is the same
// whether it was written by Seed or by Extend, so a dataset can be grown step
// by step (cachebench's scale runs do) at the cost of the new objects only.
func Extend(ctx context.Context, cfg *rest.Config, spec, have Spec) error {
	spec.defaults()
	if spec.Namespace == "" {
		return errors.New("dataset: a namespace is required")
	}
	s, err := newSeeder(cfg, spec)
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, s.cs, spec.Namespace); err != nil {
		return err
	}
	if spec.Widgets > have.Widgets {
		if err := EnsureWidgetCRD(ctx, s.dyn); err != nil {
			return err
		}
	}
	for _, k := range s.kinds() {
		from, to := have.Count(k.gvr), spec.Count(k.gvr)
		if to <= from {
			continue
		}
		err := parallel(ctx, k.gvr.Resource, to-from, spec.Concurrency, spec.Progress, func(ctx context.Context, j int) error {
			return k.create(ctx, from+j)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

type seeder struct {
	cs   kubernetes.Interface
	pcs  kubernetes.Interface // protobuf
	dyn  dynamic.Interface
	spec Spec
	now  time.Time
}

func newSeeder(cfg *rest.Config, spec Spec) (*seeder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Pods and Nodes travel as protobuf both ways, which costs the server and
	// this client less than JSON (apply patches are always JSON).
	pcfg := rest.CopyConfig(cfg)
	pcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	pcfg.ContentType = runtime.ContentTypeProtobuf
	pcs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &seeder{cs: cs, pcs: pcs, dyn: dyn, spec: spec, now: time.Now()}, nil
}

// kind is how the seeder writes one resource.
type kind struct {
	gvr    schema.GroupVersionResource
	create func(context.Context, int) error
}

func (s *seeder) kinds() []kind {
	return []kind{
		{PodsGVR, s.pod},
		{ConfigMapsGVR, s.configMap},
		{SecretsGVR, s.secret},
		{NodesGVR, s.node},
		{WidgetGVR, s.widget},
	}
}

var force = true

func applyOpts() metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: ApplyManager, Force: &force}
}

func statusOpts() metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: StatusManager, Force: &force}
}

// withLastApplied adds kubectl's last-applied annotation: the applied object
// without the annotation itself, as kubectl writes it. It returns the object
// with the annotation as JSON.
func withLastApplied(obj interface{ GetAnnotations() map[string]string }, setAnn func(map[string]string)) ([]byte, error) {
	if err := addLastApplied(obj, setAnn); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// addLastApplied adds kubectl's last-applied annotation to obj in place.
func addLastApplied(obj interface{ GetAnnotations() map[string]string }, setAnn func(map[string]string)) error {
	cfg, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	ann := make(map[string]string, len(obj.GetAnnotations())+1)
	for k, v := range obj.GetAnnotations() {
		ann[k] = v
	}
	ann[LastAppliedAnnotation] = string(cfg) + "\n"
	setAnn(ann)
	return nil
}

// pod creates Pod i and writes its status. A Pod that exists is left alone:
// its spec cannot change anyway.
func (s *seeder) pod(ctx context.Context, i int) error {
	pod := podSpec(s.spec.Namespace, s.spec.Name, i, s.spec.PodEnv, s.spec.PodShape)
	if err := addLastApplied(pod, pod.SetAnnotations); err != nil {
		return err
	}
	pods := s.pcs.CoreV1().Pods(s.spec.Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{FieldManager: ApplyManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	created.Status = podStatus(pod, i, s.now).Status
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: StatusManager}); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (s *seeder) configMap(ctx context.Context, i int) error {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(s.spec, fmt.Sprintf("config-%05d", i)),
		Data:       map[string]string{"config.yaml": filler("key", s.spec.ConfigMapBytes)},
	}
	body, err := withLastApplied(cm, cm.SetAnnotations)
	if err != nil {
		return err
	}
	cms := s.cs.CoreV1().ConfigMaps(s.spec.Namespace)
	if _, err := cms.Patch(ctx, cm.Name, types.ApplyPatchType, body, applyOpts()); err != nil {
		return fmt.Errorf("apply configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return labelAsSecondManager(ctx, s, cms.Patch, "configmap", cm.Name, s.now)
}

func (s *seeder) secret(ctx context.Context, i int) error {
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(s.spec, fmt.Sprintf("bundle-%05d", i)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"bundle.pem": []byte(filler("cert", s.spec.SecretBytes))},
	}
	// No last-applied annotation on Secrets: it would copy the secret data.
	body, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	secs := s.cs.CoreV1().Secrets(s.spec.Namespace)
	if _, err := secs.Patch(ctx, sec.Name, types.ApplyPatchType, body, applyOpts()); err != nil {
		return fmt.Errorf("apply secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	return labelAsSecondManager(ctx, s, secs.Patch, "secret", sec.Name, s.now)
}

type patchFunc[T any] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// labelAsSecondManager records a second manager on kinds without a status: a
// label and the time of a check.
func labelAsSecondManager[T any](ctx context.Context, s *seeder, patch patchFunc[T], kind, name string, at time.Time) error {
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{"name":%q,"labels":{"cachetune.dev/checked":"true"},"annotations":{"cachetune.dev/checked-at":%q}}}`,
		titleKind(kind), name, at.UTC().Format(time.RFC3339))
	if _, err := patch(ctx, name, types.ApplyPatchType, []byte(body), statusOpts()); err != nil {
		return fmt.Errorf("label %s %s/%s: %w", kind, s.spec.Namespace, name, err)
	}
	return nil
}

func titleKind(kind string) string {
	switch kind {
	case "configmap":
		return "ConfigMap"
	case "secret":
		return "Secret"
	}
	return kind
}

func objectMeta(spec Spec, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: spec.Namespace,
		Labels: map[string]string{
			LabelDataset:                   spec.Name,
			"app.kubernetes.io/managed-by": "helm",
			"app.kubernetes.io/part-of":    "shop",
		},
		Annotations: map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": spec.Namespace},
	}
}

// filler returns n bytes of line-structured text.
func filler(word string, n int) string {
	var b strings.Builder
	b.Grow(n)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s-%06d: %s\n", word, i, "c2VjdGlvbiBvZiBhIGNvbmZpZ3VyYXRpb24gdmFsdWU=")
	}
	return b.String()[:n]
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
	_, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.ApplyPatchType, []byte(body), applyOpts())
	if err != nil {
		return fmt.Errorf("ensure namespace %s: %w", ns, err)
	}
	return nil
}

// parallel runs write(i) for i in [0,n) on workers goroutines and stops at the
// first error.
func parallel(ctx context.Context, kind string, n, workers int, progress func(Progress), write func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var next atomic.Int64
	var mu sync.Mutex // serialises done and progress calls
	done := 0
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := write(ctx, i); err != nil {
					cancel(err)
					return
				}
				mu.Lock()
				done++
				if progress != nil {
					progress(Progress{Kind: kind, Done: done, Total: n, Elapsed: time.Since(start)})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}
