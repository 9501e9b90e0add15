package dataset

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EventAnnotation carries the stamp of the last write an EventWriter made to
// a Pod: its sequence number and the time the write was sent, "<seq>/<unix
// nanoseconds>" (ParseEventStamp).
const EventAnnotation = "cachetune.dev/event"

// EventManager is the field manager of the EventWriter's writes.
const EventManager = "cachetune-events"

// eventLabel is the label an EventWriter's label changes flip.
const eventLabel = "cachetune.dev/flip"

// eventFirstPod is the index of the first Pod an EventWriter creates: far
// above any dataset's own Pods and the Churner's, so that their names never
// meet.
const eventFirstPod = 900_000

// eventMix is the order of the writes of a step, repeated: six status patches
// (a kubelet's readiness), two label changes, a create and a delete, so that
// the Pods written to stay as many.
var eventMix = [...]eventKind{eventStatus, eventLabels, eventStatus, eventCreate, eventStatus, eventStatus, eventDelete, eventStatus, eventLabels, eventStatus}

type eventKind int

const (
	eventStatus eventKind = iota
	eventLabels
	eventCreate
	eventDelete
)

// EventWriter changes Pods of a seeded dataset at a fixed rate, as a busy
// cluster does in steady state, with a client of its own (straight to the
// server). Each write is stamped with a sequence number and the time it was
// sent (EventAnnotation), so that a client watching the Pods can tell which
// write each event is and how long it took to arrive: a Pod's status patch
// and label change carry the stamp, a new Pod is created with it, and a
// deleted Pod carries the stamp of its last write, which the step's
// Deletions map to the deletion's own.
//
// It writes only to Pods of its own (Setup), which Cleanup deletes, so that
// the dataset is as it was for whatever is measured next. Writes to one Pod
// are made in the order they were planned, by one of Workers goroutines.
// Its methods must not be called concurrently.
type EventWriter struct {
	rc      rest.Interface // the core/v1 REST client, protobuf; answers are not decoded
	spec    Spec
	workers int
	seq     int64 // the last sequence number used
	next    int   // the index of the next Pod to create
	members []int // the Pods written to, oldest first
	cursor  int   // the next member a patch goes to
	// names are the members' names (made once: a name takes a whole Pod to
	// make).
	names map[int]string
	// last holds, per worker, the sequence number of the last successful
	// write to each Pod the worker writes (index mod workers).
	last []map[int]int64
	flip bool // the next label change's value
}

// Workers is the number of writes an EventWriter has in flight at most.
const Workers = 64

// NewEventWriter returns an EventWriter for the dataset spec describes, which
// must have been seeded. Writes go through cfg, without client-side rate
// limiting.
func NewEventWriter(cfg *rest.Config, spec Spec) (*EventWriter, error) {
	spec.defaults()
	c := rest.CopyConfig(cfg)
	c.QPS = -1 // no client-side rate limit: the step sets the rate
	// A connection of its own: client-go shares one transport, and so one
	// HTTP/2 connection, between clients of the same TLS configuration, and
	// a connection's flow-control window is shared by its streams. On a
	// shared connection the answers to 64 writes in flight held back a watch
	// of the Pods until the server closed it as unresponsive (seen in
	// TestEventWriter); a dialer of its own makes the transport uncached.
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, err
	}
	w := &EventWriter{rc: cs.CoreV1().RESTClient(), spec: spec, workers: Workers, next: eventFirstPod,
		names: map[int]string{}, last: make([]map[int]int64, Workers)}
	for i := range w.last {
		w.last[i] = map[int]int64{}
	}
	return w, nil
}

// EventStep is what one EventWriter.Run wrote. It crosses from cachebench's
// parent to the measured child as JSON.
type EventStep struct {
	// Rate is the rate asked for, writes per second, for Duration.
	Rate     float64       `json:"rate"`
	Duration time.Duration `json:"duration"`
	// First and Last are the sequence numbers of the step's first and last
	// writes: every write of the step has one in [First, Last].
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Status, Labels, Created and Deleted count the successful writes by
	// kind.
	Status  int `json:"status"`
	Labels  int `json:"labels"`
	Created int `json:"created"`
	Deleted int `json:"deleted"`
	// Failed are the sequence numbers of the writes that failed, Error the
	// first failure.
	Failed []int64 `json:"failed,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Deletions are the step's successful deletes.
	Deletions []Deletion `json:"deletions,omitempty"`
	// Started is when the first write was sent; Elapsed runs from then to the
	// answer of the last.
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed"`
}

// Deletion is one delete of an EventWriter's step.
type Deletion struct {
	// Seq is the delete's sequence number; Of is the stamp's sequence
	// number the deleted Pod carried (its last write's), which is what a
	// watcher sees in the DELETED event.
	Seq int64 `json:"seq"`
	Of  int64 `json:"of"`
	// At is when the delete was sent, in Unix nanoseconds.
	At int64 `json:"at"`
}

// Writes is the number of successful writes.
func (s EventStep) Writes() int { return s.Status + s.Labels + s.Created + s.Deleted }

// Achieved is the rate the step achieved: its successful writes over the
// time from its first write sent to its last answered. It is the rate to
// report; Rate is only what was asked.
func (s EventStep) Achieved() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Writes()) / s.Elapsed.Seconds()
}

// ParseEventStamp reads an EventAnnotation value.
func ParseEventStamp(v string) (seq, sentAt int64, ok bool) {
	a, b, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	seq, err1 := strconv.ParseInt(a, 10, 64)
	sentAt, err2 := strconv.ParseInt(b, 10, 64)
	return seq, sentAt, err1 == nil && err2 == nil && seq > 0
}

func stamp(seq int64, at time.Time) string {
	return strconv.FormatInt(seq, 10) + "/" + strconv.FormatInt(at.UnixNano(), 10)
}

// Setup creates n Pods of the writer's own, as the dataset's Pods are made
// (spec and status by their two managers), each stamped, and returns once
// they are written. They use sequence numbers 1 to n on a new writer.
func (w *EventWriter) Setup(ctx context.Context, n int) error {
	type made struct {
		idx int
		seq int64
	}
	jobs := make([]made, n)
	for j := range jobs {
		w.seq++
		jobs[j] = made{w.next, w.seq}
		w.next++
	}
	err := parallel(ctx, "pods", n, w.spec.Concurrency, nil, func(ctx context.Context, j int) error {
		return w.createWithStatus(ctx, jobs[j].idx, jobs[j].seq)
	})
	if err != nil {
		return err
	}
	for _, m := range jobs {
		w.members = append(w.members, m.idx)
		w.names[m.idx] = w.name(m.idx)
		w.last[m.idx%w.workers][m.idx] = m.seq
	}
	return nil
}

// createWithStatus creates Pod idx stamped with seq and writes its status,
// as the seeder does.
func (w *EventWriter) createWithStatus(ctx context.Context, idx int, seq int64) error {
	pod, err := w.pod(idx, seq, time.Now())
	if err != nil {
		return err
	}
	var created corev1.Pod
	if err := w.rc.Post().Namespace(w.spec.Namespace).Resource("pods").Param("fieldManager", ApplyManager).
		Body(pod).Do(ctx).Into(&created); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	created.Status = podStatus(pod, idx, time.Now()).Status
	if err := w.rc.Put().Namespace(w.spec.Namespace).Resource("pods").Name(pod.Name).SubResource("status").
		Param("fieldManager", StatusManager).Body(&created).Do(ctx).Error(); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// pod returns Pod idx of the dataset stamped with seq at at, with kubectl's
// last-applied annotation as the seeded Pods have it.
func (w *EventWriter) pod(idx int, seq int64, at time.Time) (*corev1.Pod, error) {
	pod := podSpec(w.spec.Namespace, w.spec.Name, idx, w.spec.PodEnv, w.spec.PodShape)
	if err := addLastApplied(pod, pod.SetAnnotations); err != nil {
		return nil, err
	}
	pod.Annotations[EventAnnotation] = stamp(seq, at)
	return pod, nil
}

func (w *EventWriter) name(idx int) string {
	return podSpec(w.spec.Namespace, w.spec.Name, idx, w.spec.PodEnv, w.spec.PodShape).Name
}

// eventJob is one planned write.
type eventJob struct {
	kind  eventKind
	idx   int
	name  string
	seq   int64
	label string // a label change's value
}

// Run writes at rate writes per second for d, in the mix of eventMix, to the
// Pods made by Setup and those its creates add, and returns what it wrote.
// The writes of a step are planned at the rate from the step's start, and
// none after d; when the server cannot keep up, a planned write waits for its
// worker, so fewer are made and the rate achieved (EventStep.Achieved) is
// lower than asked. A write that fails is counted and the step goes on. It returns an error only when ctx ends or nothing is
// left to write to.
func (w *EventWriter) Run(ctx context.Context, rate float64, d time.Duration) (EventStep, error) {
	step := EventStep{Rate: rate, Duration: d, First: w.seq + 1}
	if rate <= 0 || d <= 0 {
		return step, fmt.Errorf("event writes need a positive rate and duration, got %v/s for %s", rate, d)
	}
	if len(w.members) == 0 {
		return step, errors.New("no pods to write to: call Setup first")
	}
	start := time.Now()
	r := &stepRecord{step: &step, end: start}
	queues := make([]chan eventJob, w.workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan eventJob, 2) // a short queue: a server that falls behind holds the plan back
		last := w.last[i]
		wg.Go(func() {
			for job := range queues[i] {
				r.done(w.write(ctx, job, last))
			}
		})
	}
	planned := 0
	var err error
	for err == nil {
		elapsed := time.Since(start)
		if elapsed >= d {
			break
		}
		for due := int(rate*elapsed.Seconds()) + 1; planned < due && err == nil && time.Since(start) < d; planned++ {
			job := w.plan()
			select {
			case queues[job.idx%w.workers] <- job:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		next := time.Duration(float64(planned) / rate * float64(time.Second))
		if err == nil {
			err = sleepCtx(ctx, min(next, d)-time.Since(start))
		}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	step.Last = w.seq
	step.Started = start
	step.Elapsed = r.end.Sub(start)
	return step, err
}

// plan picks the next write: its kind from the mix, its Pod (a new one for a
// create, the oldest for a delete, the next in turn for a patch) and its
// sequence number.
func (w *EventWriter) plan() eventJob {
	w.seq++
	job := eventJob{kind: eventMix[w.seq%int64(len(eventMix))], seq: w.seq}
	if job.kind == eventDelete && len(w.members) < 2 {
		job.kind = eventStatus // keep one Pod to write to
	}
	switch job.kind {
	case eventCreate:
		job.idx = w.next
		w.next++
		w.members = append(w.members, job.idx)
		w.names[job.idx] = w.name(job.idx)
	case eventDelete:
		job.idx = w.members[0]
		w.members = w.members[1:]
		if w.cursor > 0 {
			w.cursor--
		}
	default:
		w.cursor %= len(w.members)
		job.idx = w.members[w.cursor]
		w.cursor++
	}
	job.name = w.names[job.idx]
	if job.kind == eventDelete {
		delete(w.names, job.idx)
	}
	if job.kind == eventLabels {
		job.label = "a"
		if w.flip {
			job.label = "b"
		}
		w.flip = !w.flip
	}
	return job
}

// writeResult is one write done.
type writeResult struct {
	job    eventJob
	of     int64 // for a delete: the stamp the Pod carried
	sentAt time.Time
	err    error
}

// write makes one write; last holds the worker's Pods' last stamps.
func (w *EventWriter) write(ctx context.Context, job eventJob, last map[int]int64) writeResult {
	res := writeResult{job: job, sentAt: time.Now()}
	name := job.name
	switch job.kind {
	case eventStatus:
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`,
			EventAnnotation, stamp(job.seq, res.sentAt), res.sentAt.UTC().Format(time.RFC3339))
		res.err = w.rc.Patch(types.StrategicMergePatchType).Namespace(w.spec.Namespace).Resource("pods").Name(name).SubResource("status").
			Param("fieldManager", EventManager).Body([]byte(body)).Do(ctx).Error()
	case eventLabels:
		body := fmt.Sprintf(`{"metadata":{"labels":{%q:%q},"annotations":{%q:%q}}}`, eventLabel, job.label, EventAnnotation, stamp(job.seq, res.sentAt))
		res.err = w.rc.Patch(types.MergePatchType).Namespace(w.spec.Namespace).Resource("pods").Name(name).
			Param("fieldManager", EventManager).Body([]byte(body)).Do(ctx).Error()
	case eventCreate:
		pod, err := w.pod(job.idx, job.seq, res.sentAt)
		if err != nil {
			res.err = err
			break
		}
		res.err = w.rc.Post().Namespace(w.spec.Namespace).Resource("pods").Param("fieldManager", ApplyManager).Body(pod).Do(ctx).Error()
	case eventDelete:
		res.of = last[job.idx]
		res.err = w.rc.Delete().Namespace(w.spec.Namespace).Resource("pods").Name(name).
			Body(&metav1.DeleteOptions{GracePeriodSeconds: new(int64)}).Do(ctx).Error()
	}
	switch {
	case res.err != nil:
		res.err = fmt.Errorf("write %d to pod %s/%s: %w", job.seq, w.spec.Namespace, name, res.err)
	case job.kind == eventDelete:
		delete(last, job.idx)
	default:
		last[job.idx] = job.seq
	}
	return res
}

// stepRecord collects the results of a step's workers.
type stepRecord struct {
	mu   sync.Mutex
	step *EventStep
	end  time.Time // the last answer
}

func (r *stepRecord) done(res writeResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end = time.Now()
	s := r.step
	if res.err != nil {
		s.Failed = append(s.Failed, res.job.seq)
		if s.Error == "" {
			s.Error = res.err.Error()
		}
		return
	}
	switch res.job.kind {
	case eventStatus:
		s.Status++
	case eventLabels:
		s.Labels++
	case eventCreate:
		s.Created++
	case eventDelete:
		s.Deleted++
		s.Deletions = append(s.Deletions, Deletion{Seq: res.job.seq, Of: res.of, At: res.sentAt.UnixNano()})
	}
}

// Cleanup deletes every Pod the writer made that is still there, and waits
// until the server's watch cache has seen them go. The writer can be set up
// again afterwards.
func (w *EventWriter) Cleanup(ctx context.Context) error {
	members := w.members
	err := parallel(ctx, "pods", len(members), w.spec.Concurrency, nil, func(ctx context.Context, j int) error {
		name := w.names[members[j]]
		err := w.rc.Delete().Namespace(w.spec.Namespace).Resource("pods").Name(name).
			Body(&metav1.DeleteOptions{GracePeriodSeconds: new(int64)}).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", w.spec.Namespace, name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.members, w.cursor = nil, 0
	clear(w.names)
	for i := range w.last {
		clear(w.last[i])
	}
	// A consistent list served from the watch cache waits for it to catch up.
	return w.rc.Get().Namespace(w.spec.Namespace).Resource("pods").
		Param("labelSelector", LabelDataset+"="+w.spec.Name).Param("limit", "1").Do(ctx).Error()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
