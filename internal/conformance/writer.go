package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// runLabel marks the objects of one run; every informer selects on it, so
// runs and other tests on the same server never see each other's objects.
const runLabel = "conformance.cachetune.dev/run"

// finalizer holds a deleted Pod in Terminating until the writer releases it.
const finalizer = "conformance.cachetune.dev/hold"

// writer makes the program's writes, directly on the server (not through the
// fault proxy), and keeps a model of what it created so that it picks objects
// that exist. Its choices depend only on its random source, so a seed replays.
type writer struct {
	cs    kubernetes.Interface
	rnd   *rand.Rand
	run   string
	seq   int
	nsSeq int
	// namespaces holds the run's namespaces in creation order; the first
	// is never deleted.
	namespaces []string
	pods       map[string]*podModel // key -> model
	last       string               // the key of the Pod created last
	markSeq    int
	log        []string
}

type podModel struct {
	ns, name    string
	held        bool // has the finalizer
	terminating bool // deleted, held by the finalizer
	selected    bool // carries the run label's value, so informers see it
}

func newWriter(cs kubernetes.Interface, run string, seed uint64) *writer {
	return &writer{cs: cs, run: run, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), pods: map[string]*podModel{}}
}

func (w *writer) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

// setup creates the run's first namespace, its mark and n Pods in it.
func (w *writer) setup(ctx context.Context, n int) error {
	if err := w.createNamespace(ctx); err != nil {
		return err
	}
	if err := w.createMark(ctx); err != nil {
		return err
	}
	for range n {
		if err := w.create(ctx, w.namespaces[0]); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) createNamespace(ctx context.Context) error {
	w.nsSeq++
	name := fmt.Sprintf("cf-%s-%d", w.run, w.nsSeq)
	_, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	w.namespaces = append(w.namespaces, name)
	w.logf("create namespace %s", name)
	return nil
}

// markName is the run's mark: a Pod in its first namespace, outside the
// informers' selector, that the writer patches to learn the server's current
// resourceVersion from its answer (see mark).
const markName = "mark"

func (w *writer) createMark(ctx context.Context) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: markName, Namespace: w.namespaces[0], Labels: map[string]string{runLabel: markOf(w.run)}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/shop/app:1"}}},
	}
	if _, err := w.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// mark writes to the run's mark and returns the resourceVersion of the
// write: every write before it has an older one.
func (w *writer) mark(ctx context.Context) (string, error) {
	w.markSeq++
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"conformance/mark":"%d"}}}`, w.markSeq)
	pod, err := w.cs.CoreV1().Pods(w.namespaces[0]).Patch(ctx, markName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("mark pod %s/%s: %w", w.namespaces[0], markName, err)
	}
	return pod.ResourceVersion, nil
}

// proof patches a Pod in the informers' selector (creating one when there is
// none), after a step's fault is lifted: an informer then holds the truth
// only once it sees a write made after the lift, that is, once it has
// recovered, not merely when the fault happened to hide nothing.
func (w *writer) proof(ctx context.Context) error {
	p := w.pick(func(p *podModel) bool { return p.selected && !p.terminating })
	if p == nil {
		return w.create(ctx, w.pickNamespace())
	}
	w.markSeq++
	w.logf("proof %s/%s", p.ns, p.name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"conformance/proof":"%d"}}}`, w.markSeq)
	if _, err := w.CoreV1Pods()(p.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch pod %s/%s: %w", p.ns, p.name, err)
	}
	return nil
}

// ops are the writes a step picks from, with weights.
var ops = []struct {
	name   string
	weight int
}{
	{"create", 6}, {"update", 5}, {"patch", 4}, {"status", 4}, {"delete", 4},
	{"delete-held", 2}, {"release", 3}, {"unselect", 2}, {"reselect", 2},
	{"create-delete", 2}, {"namespace-create", 1}, {"namespace-drain", 1},
	{"share", 3}, {"diverge", 3},
}

// write makes one random write.
func (w *writer) write(ctx context.Context) error {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := w.rnd.IntN(total)
	for _, o := range ops {
		if n -= o.weight; n < 0 {
			return w.do(ctx, o.name)
		}
	}
	return nil
}

func (w *writer) do(ctx context.Context, op string) error {
	switch op {
	case "create":
		return w.create(ctx, w.pickNamespace())
	case "create-delete":
		ns := w.pickNamespace()
		if err := w.create(ctx, ns); err != nil {
			return err
		}
		return w.delete(ctx, w.newest())
	case "update":
		return w.updateLabel(ctx)
	case "patch":
		return w.patchAnnotation(ctx)
	case "status":
		return w.updateStatus(ctx)
	case "delete":
		return w.delete(ctx, w.pick(func(p *podModel) bool { return !p.terminating && !p.held }))
	case "delete-held":
		return w.delete(ctx, w.pick(func(p *podModel) bool { return !p.terminating && p.held }))
	case "release":
		p := w.pick(func(p *podModel) bool { return p.held })
		if p == nil {
			return nil
		}
		return w.release(ctx, p)
	case "unselect", "reselect":
		return w.setSelected(ctx, op)
	case "namespace-create":
		return w.addNamespace(ctx)
	case "namespace-drain":
		return w.drainNamespace(ctx)
	case "share":
		return w.share(ctx)
	case "diverge":
		return w.diverge(ctx)
	}
	return fmt.Errorf("unknown op %q", op)
}

// updateLabel rewrites the gen label of a Pod that is not terminating.
func (w *writer) updateLabel(ctx context.Context) error {
	pods := w.CoreV1Pods()
	p := w.pick(func(p *podModel) bool { return !p.terminating })
	if p == nil {
		return nil
	}
	w.logf("update %s/%s", p.ns, p.name)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Labels["gen"] = strconv.Itoa(w.rnd.IntN(1000))
		_, err = pods(p.ns).Update(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// patchAnnotation merge-patches an annotation of a Pod that is not
// terminating.
func (w *writer) patchAnnotation(ctx context.Context) error {
	p := w.pick(func(p *podModel) bool { return !p.terminating })
	if p == nil {
		return nil
	}
	w.logf("patch %s/%s", p.ns, p.name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"conformance/n":"%d"}}}`, w.rnd.IntN(1000))
	_, err := w.CoreV1Pods()(p.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// updateStatus rewrites the status message of a Pod that is not terminating,
// through the status subresource.
func (w *writer) updateStatus(ctx context.Context) error {
	pods := w.CoreV1Pods()
	p := w.pick(func(p *podModel) bool { return !p.terminating })
	if p == nil {
		return nil
	}
	w.logf("status %s/%s", p.ns, p.name)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Message = "step " + strconv.Itoa(w.rnd.IntN(1000))
		_, err = pods(p.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// setSelected moves a Pod out of the run's selector (op "unselect") or back
// into it ("reselect") by its run label.
func (w *writer) setSelected(ctx context.Context, op string) error {
	want := op == "reselect"
	p := w.pick(func(p *podModel) bool { return !p.terminating && p.selected != want })
	if p == nil {
		return nil
	}
	value := w.run
	if !want {
		value = outOf(w.run)
	}
	w.logf("%s %s/%s", op, p.ns, p.name)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, runLabel, value)
	if _, err := w.CoreV1Pods()(p.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	p.selected = want
	return nil
}

// addNamespace creates a namespace with three Pods, up to four namespaces.
func (w *writer) addNamespace(ctx context.Context) error {
	if len(w.namespaces) >= 4 {
		return nil
	}
	if err := w.createNamespace(ctx); err != nil {
		return err
	}
	for range 3 {
		if err := w.create(ctx, w.namespaces[len(w.namespaces)-1]); err != nil {
			return err
		}
	}
	return nil
}

// drainNamespace deletes every Pod of a namespace other than the first, then
// the namespace.
func (w *writer) drainNamespace(ctx context.Context) error {
	if len(w.namespaces) < 2 {
		return nil
	}
	ns := w.namespaces[1+w.rnd.IntN(len(w.namespaces)-1)]
	w.logf("drain namespace %s", ns)
	for _, k := range w.sortedKeys() {
		p := w.pods[k]
		if p.ns != ns {
			continue
		}
		if p.held {
			if err := w.release(ctx, p); err != nil {
				return err
			}
		}
		if w.pods[k] != nil {
			if err := w.delete(ctx, p); err != nil {
				return err
			}
		}
	}
	w.namespaces = slices.DeleteFunc(w.namespaces, func(n string) bool { return n == ns })
	// Without a namespace controller the namespace stays Terminating; it
	// holds nothing any more.
	return w.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// CoreV1Pods returns the pods client of a namespace.
func (w *writer) CoreV1Pods() func(ns string) podsClient {
	return func(ns string) podsClient { return w.cs.CoreV1().Pods(ns) }
}

type podsClient = interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Update(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
}

func (w *writer) pickNamespace() string { return w.namespaces[w.rnd.IntN(len(w.namespaces))] }

func (w *writer) sortedKeys() []string {
	keys := make([]string, 0, len(w.pods))
	for k := range w.pods {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pick returns a random modelled Pod that ok accepts, or nil.
func (w *writer) pick(ok func(*podModel) bool) *podModel {
	var cands []*podModel
	for _, k := range w.sortedKeys() {
		if p := w.pods[k]; ok(p) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[w.rnd.IntN(len(cands))]
}

func (w *writer) newest() *podModel { return w.pods[w.last] }

func (w *writer) create(ctx context.Context, ns string) error {
	pod, held := w.newPod(ns)
	if _, err := w.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", ns, pod.Name, err)
	}
	w.created(pod, held)
	return nil
}

// patchBurst patches n times Pods that exist, from several goroutines, so
// that events queue up behind a slow consumer without the next list growing.
func (w *writer) patchBurst(ctx context.Context, n int) error {
	var targets []*podModel
	for _, k := range w.sortedKeys() {
		if p := w.pods[k]; !p.terminating && p.selected {
			targets = append(targets, p)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	w.logf("patch burst of %d over %d pods", n, len(targets))
	errs := make(chan error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for i := range work {
				p := targets[i%len(targets)]
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"conformance/burst":"%d"}}}`, i)
				if _, err := w.cs.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					errs <- fmt.Errorf("patch pod %s/%s: %w", p.ns, p.name, err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// newPod returns the next Pod to create, and whether it has the finalizer.
// Its labels, container, environment and resources take a few values each,
// so that Pods often have equal parts (which WithSharing stores once) and
// parts that differ in one value only. The Pods of one app have one
// controller (a ReplicaSet that does not exist: the server runs no garbage
// collector), as a workload's do: sharing walks a Pod it gets without a
// previous version beside another of its controller's, whose parts differ
// from its own in those few values.
func (w *writer) newPod(ns string) (*corev1.Pod, bool) {
	w.seq++
	name := fmt.Sprintf("p-%04d", w.seq)
	held := w.rnd.IntN(5) == 0
	tier := tiers[w.rnd.IntN(len(tiers))]
	mode := []string{"prod", "canary"}[w.rnd.IntN(2)]
	cpu := []string{"100m", "250m"}[w.rnd.IntN(2)]
	app := fmt.Sprintf("app-%d", w.seq%3)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels:      map[string]string{runLabel: w.run, "app": app, "tier": tier, "gen": "0"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Pod","metadata":{"name":"` + name + `"}}`},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app,
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", w.seq%3)), Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com/shop/app:1",
			Env: []corev1.EnvVar{{Name: "MODE", Value: mode}, {Name: "SLOT", Value: strconv.Itoa(w.seq % 4)}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi"),
			}},
		}}},
	}
	if held {
		pod.Finalizers = []string{finalizer}
	}
	return pod, held
}

var tiers = []string{"web", "api", "db"}

// share makes a Pod's labels (but its run label) and container image equal
// to another's: with WithSharing on, the two then hold one copy of each.
func (w *writer) share(ctx context.Context) error {
	to := w.pick(func(p *podModel) bool { return !p.terminating })
	from := w.pick(func(p *podModel) bool { return !p.terminating && p != to })
	if to == nil || from == nil {
		return nil
	}
	w.logf("share %s/%s with %s/%s", to.ns, to.name, from.ns, from.name)
	src, err := w.cs.CoreV1().Pods(from.ns).Get(ctx, from.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", from.ns, from.name, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{"app":%q,"tier":%q,"gen":%q}},"spec":{"containers":[{"name":"app","image":%q}]}}`,
		src.Labels["app"], src.Labels["tier"], src.Labels["gen"], src.Spec.Containers[0].Image)
	if _, err := w.CoreV1Pods()(to.ns).Patch(ctx, to.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch pod %s/%s: %w", to.ns, to.name, err)
	}
	return nil
}

// diverge changes one part of a Pod that other Pods may share: its image or
// one label. A cache that shares parts must give only that Pod the change.
func (w *writer) diverge(ctx context.Context) error {
	p := w.pick(func(p *podModel) bool { return !p.terminating })
	if p == nil {
		return nil
	}
	n := w.rnd.IntN(1000)
	var patch string
	if w.rnd.IntN(2) == 0 {
		w.logf("diverge %s/%s image", p.ns, p.name)
		patch = fmt.Sprintf(`{"spec":{"containers":[{"name":"app","image":"registry.example.com/shop/app:%d"}]}}`, n)
	} else {
		w.logf("diverge %s/%s tier", p.ns, p.name)
		patch = fmt.Sprintf(`{"metadata":{"labels":{"tier":"%s-%d"}}}`, tiers[n%len(tiers)], n)
	}
	if _, err := w.CoreV1Pods()(p.ns).Patch(ctx, p.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch pod %s/%s: %w", p.ns, p.name, err)
	}
	return nil
}

// created records a Pod the server created.
func (w *writer) created(pod *corev1.Pod, held bool) {
	k := key(pod.Namespace, pod.Name)
	w.pods[k] = &podModel{ns: pod.Namespace, name: pod.Name, held: held, selected: true}
	w.last = k
	w.logf("create %s held=%v", k, held)
}

func (w *writer) delete(ctx context.Context, p *podModel) error {
	if p == nil {
		return nil
	}
	w.logf("delete %s/%s", p.ns, p.name)
	err := w.cs.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", p.ns, p.name, err)
	}
	if p.held {
		p.terminating = true
		return nil
	}
	delete(w.pods, key(p.ns, p.name))
	return nil
}

// release removes the finalizer; a terminating Pod is then deleted.
func (w *writer) release(ctx context.Context, p *podModel) error {
	w.logf("release %s/%s", p.ns, p.name)
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := w.cs.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release pod %s/%s: %w", p.ns, p.name, err)
	}
	p.held = false
	if p.terminating {
		delete(w.pods, key(p.ns, p.name))
	}
	return nil
}

// releaseAll releases every held Pod, so that a run leaves nothing Terminating.
func (w *writer) releaseAll(ctx context.Context) error {
	for _, k := range w.sortedKeys() {
		if p := w.pods[k]; p != nil && p.held {
			if err := w.release(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}
