package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NewLeaseMembership returns a membership whose ring is built from the live
// Leases of a group, one per replica, in a namespace the caller names.
//
// Each replica creates and renews its own Lease every RetryPeriod, as
// client-go's leader election renews a leader's. A Lease is live while it has
// been renewed within its duration, as this process observed it (the other
// replica's clock is never trusted, as in leader election); the ring is
// rebuilt when a Lease appears, is deleted, or expires. Before it counts a
// Lease expired, a replica lists the group's Leases to check that it was not
// renewed meanwhile: a watch can tell of renewals late when the server or the
// process is loaded. A replica that cannot renew its own Lease for
// RenewDeadline leaves the ring itself and holds nothing until it can again,
// before the others (who wait LeaseDuration) take its objects. When the membership stops, it deletes its Lease, and the
// others take its objects at once.
//
// A replica deletes the Leases it has seen expire (unless they were renewed
// in between), so that the Lease of a killed replica does not make replicas
// that start later wait out its duration.
//
// The identity needs RBAC on Leases in the namespace: get, create, update,
// delete, list and watch.
func NewLeaseMembership(client kubernetes.Interface, cfg LeaseConfig) (*Membership, error) {
	if client == nil {
		return nil, errors.New("shard: lease membership: no client")
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m := newMembership(cfg.Identity, "leases", cfg.Logger.WithValues("shardGroup", cfg.Group))
	m.source = &leaseMembership{publish: m.publish, logger: m.logger, client: client, cfg: cfg,
		seen: map[string]observedLease{}, confirmed: map[string]string{}, collected: map[string]string{}, wake: make(chan struct{}, 1)}
	return m, nil
}

// leaseMembership is the Lease side of a Membership: it keeps the
// membership's ring that of the live Leases.
type leaseMembership struct {
	// publish makes members the membership's ring (Membership.publish); only
	// run's goroutine calls it.
	publish func(members []string)
	logger  logr.Logger
	client  kubernetes.Interface
	cfg     LeaseConfig
	wake    chan struct{}

	mu sync.Mutex
	// seen is every Lease of the group by name, with when this process saw
	// it change.
	seen map[string]observedLease
	// confirmed is the resourceVersion at which each Lease that looked
	// expired was found unchanged on the server (see confirm): only then is
	// it expired.
	confirmed map[string]string
	// collected is the resourceVersion at which each expired Lease was last
	// handed to collect, so that it is deleted once.
	collected map[string]string
	mine      *coordinationv1.Lease // our Lease as last written
	lastRenew time.Time
	lastErr   string
	synced    bool
}

type observedLease struct {
	holder   string
	rv       string
	duration time.Duration
	observed time.Time
}

func (l *leaseMembership) status(st *MembershipStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st.Lease = l.cfg.Namespace + "/" + l.cfg.leaseName()
	st.LastRenew = l.lastRenew
	st.LastError = l.lastErr
}

func (l *leaseMembership) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run renews the Lease, watches the group's Leases and rebuilds the ring
// until ctx ends, then deletes the Lease.
func (l *leaseMembership) run(ctx context.Context) {
	inf := l.informer()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { inf.RunWithContext(ctx) })
	wg.Go(func() { l.renewLoop(ctx) })
	defer l.release()
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			l.mu.Lock()
			l.synced = true
			l.mu.Unlock()
			l.poke()
		}
	})
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, expired, suspects := l.rebuild(time.Now())
		if len(suspects) > 0 {
			l.confirm(ctx, suspects)
			continue // rebuild with what the server said
		}
		l.collect(ctx, expired)
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// informer watches the group's Leases and records when each changed.
func (l *leaseMembership) informer() cache.SharedIndexInformer {
	leases := l.client.CoordinationV1().Leases(l.cfg.Namespace)
	selector := GroupLabel + "=" + l.cfg.Group
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return leases.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &coordinationv1.Lease{}, cache.SharedIndexInformerOptions{
		ObjectDescription: "shard leases " + l.cfg.Namespace + "/" + selector,
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.observe(obj) },
		UpdateFunc: func(_, obj any) { l.observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if ls, ok := obj.(*coordinationv1.Lease); ok {
				l.mu.Lock()
				delete(l.seen, ls.Name)
				delete(l.confirmed, ls.Name)
				delete(l.collected, ls.Name)
				l.mu.Unlock()
				l.poke()
			}
		},
	})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		l.failed(fmt.Errorf("watch the Leases of shard group %s in %s: %w", l.cfg.Group, l.cfg.Namespace, err))
	})
	return inf
}

func (l *leaseMembership) observe(obj any) {
	ls, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	o := l.observed(ls)
	l.mu.Lock()
	if prev, ok := l.seen[ls.Name]; ok && prev.rv == o.rv {
		l.mu.Unlock()
		return
	}
	o.observed = time.Now()
	l.seen[ls.Name] = o
	l.mu.Unlock()
	l.poke()
}

// observed is what the membership keeps of a Lease; its observed time is
// the caller's to set.
func (l *leaseMembership) observed(ls *coordinationv1.Lease) observedLease {
	o := observedLease{rv: ls.ResourceVersion, duration: l.cfg.LeaseDuration}
	if ls.Spec.HolderIdentity != nil {
		o.holder = *ls.Spec.HolderIdentity
	}
	if ls.Spec.LeaseDurationSeconds != nil && *ls.Spec.LeaseDurationSeconds > 0 {
		o.duration = time.Duration(*ls.Spec.LeaseDurationSeconds) * time.Second
	}
	return o
}

func (l *leaseMembership) failed(err error) {
	l.mu.Lock()
	l.lastErr = err.Error()
	l.mu.Unlock()
	l.logger.Error(err, "shard membership")
}

// rebuild publishes the ring of the live Leases at now, and returns when the
// next one expires and the Leases this replica has seen expire since the last
// rebuild, for collect. A Lease not seen renewed for its duration is only a
// suspect until confirm has asked the server: rebuild then returns the
// suspects, keeps them in the ring and publishes nothing new for them.
func (l *leaseMembership) rebuild(now time.Time) (time.Time, []expiredLease, []expiredLease) {
	l.mu.Lock()
	next := now.Add(time.Hour)
	if !l.synced || l.lastRenew.IsZero() {
		l.mu.Unlock()
		return next, nil, nil // not ready: our Lease or the others' are not known yet
	}
	mine := l.cfg.leaseName()
	self := now.Before(l.lastRenew.Add(l.cfg.RenewDeadline))
	var members []string
	var expired, suspects []expiredLease
	for name, o := range l.seen {
		if name == mine || o.holder == l.cfg.Identity {
			continue
		}
		if until := o.observed.Add(o.duration); now.Before(until) {
			if o.holder != "" {
				members = append(members, o.holder)
			}
			next = earliest(next, until)
		} else if l.confirmed[name] != o.rv {
			suspects = append(suspects, expiredLease{name: name, rv: o.rv})
		} else if self && l.collected[name] != o.rv {
			// Only a replica that renews its own Lease judges the others': one
			// cut off from the server sees every Lease expire.
			l.collected[name] = o.rv
			expired = append(expired, expiredLease{name: name, rv: o.rv})
		}
	}
	if self {
		members = append(members, l.cfg.Identity)
		next = earliest(next, l.lastRenew.Add(l.cfg.RenewDeadline))
	}
	l.mu.Unlock()
	if len(suspects) > 0 {
		return next, nil, suspects
	}
	l.publish(members)
	return next, expired, nil
}

// confirm asks the server whether the suspects, Leases that this replica has
// not seen renewed for their duration, were renewed all the same. The watch
// that tells of renewals can run late, or miss them until it lists again,
// when the server or this process is loaded: the holder then renews in time
// and counts itself a member while this replica would drop it and take its
// objects, and the ring would change back and forth with every late
// renewal. A Lease whose resourceVersion on the server differs from the one
// seen was renewed since, and counts as observed now; one that has not
// changed, or is gone, is expired at its resourceVersion. When the server
// cannot be asked, the suspects are expired as before: a replica cut off
// from the server cannot tell, and leaves the ring itself too.
func (l *leaseMembership) confirm(ctx context.Context, suspects []expiredLease) {
	lctx, cancel := context.WithTimeout(ctx, l.cfg.RetryPeriod)
	list, err := l.client.CoordinationV1().Leases(l.cfg.Namespace).List(lctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + l.cfg.Group})
	cancel()
	current := map[string]*coordinationv1.Lease{}
	if err == nil {
		for i := range list.Items {
			current[list.Items[i].Name] = &list.Items[i]
		}
	} else if ctx.Err() == nil {
		l.logger.V(2).Info("could not confirm that shard Leases expired", "leases", len(suspects), "err", err)
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range suspects {
		seen, ok := l.seen[s.name]
		if !ok || seen.rv != s.rv {
			continue // deleted or renewed since, as the watch told
		}
		if ls, ok := current[s.name]; ok && ls.ResourceVersion != s.rv {
			o := l.observed(ls)
			o.observed = now
			l.seen[s.name] = o
			continue
		}
		l.confirmed[s.name] = s.rv
	}
}

// expiredLease is a Lease of the group that expired at resourceVersion rv.
type expiredLease struct{ name, rv string }

// collect deletes Leases that expired, each only if it has not been renewed
// since (a precondition on its resourceVersion): a replica killed without
// releasing its Lease leaves it behind, and a replica that starts later would
// otherwise count it as live for a whole Lease duration (it trusts no clock but
// its own, so it cannot tell an old Lease from a fresh one) and the Leases of
// dead replicas would pile up in the namespace.
func (l *leaseMembership) collect(ctx context.Context, expired []expiredLease) {
	leases := l.client.CoordinationV1().Leases(l.cfg.Namespace)
	for _, e := range expired {
		dctx, cancel := context.WithTimeout(ctx, l.cfg.RetryPeriod)
		rv := e.rv
		err := leases.Delete(dctx, e.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		cancel()
		switch {
		case err == nil:
			l.logger.Info("deleted an expired shard Lease", "lease", l.cfg.Namespace+"/"+e.name)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil:
			// Gone already, or renewed since: nothing to do.
		default:
			l.logger.V(2).Info("could not delete an expired shard Lease", "lease", l.cfg.Namespace+"/"+e.name, "err", err)
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// renewLoop renews the Lease every RetryPeriod.
func (l *leaseMembership) renewLoop(ctx context.Context) {
	for {
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RenewDeadline)
		err := l.renew(rctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.failed(fmt.Errorf("renew Lease %s/%s: %w", l.cfg.Namespace, l.cfg.leaseName(), err))
		} else {
			l.mu.Lock()
			first := l.lastRenew.IsZero()
			l.lastRenew = time.Now()
			l.lastErr = ""
			l.mu.Unlock()
			if first {
				l.poke()
			}
		}
		l.poke() // our own liveness may have changed either way
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.cfg.RetryPeriod):
		}
	}
}

// renew creates the Lease or renews it, taking it over from a previous
// process of the same identity.
func (l *leaseMembership) renew(ctx context.Context) error {
	leases := l.client.CoordinationV1().Leases(l.cfg.Namespace)
	now := metav1.NewMicroTime(time.Now())
	l.mu.Lock()
	mine := l.mine
	l.mu.Unlock()
	takeover := mine == nil
	if mine == nil {
		got, err := leases.Get(ctx, l.cfg.leaseName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secs := int32(l.cfg.LeaseDuration / time.Second)
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: l.cfg.leaseName(), Namespace: l.cfg.Namespace, Labels: map[string]string{GroupLabel: l.cfg.Group}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &l.cfg.Identity, LeaseDurationSeconds: &secs,
					AcquireTime: &now, RenewTime: &now},
			}
			created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			l.setMine(created)
			return nil
		case err != nil:
			return err
		}
		mine = got
	}
	next := mine.DeepCopy()
	secs := int32(l.cfg.LeaseDuration / time.Second)
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[GroupLabel] = l.cfg.Group
	if next.Spec.HolderIdentity == nil || *next.Spec.HolderIdentity != l.cfg.Identity || takeover {
		next.Spec.AcquireTime = &now // a new process of this identity
	}
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime = &l.cfg.Identity, &secs, &now
	updated, err := leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			l.setMine(nil) // read it again next time
		}
		return err
	}
	l.setMine(updated)
	return nil
}

func (l *leaseMembership) setMine(ls *coordinationv1.Lease) {
	l.mu.Lock()
	l.mine = ls
	l.mu.Unlock()
}

// release deletes the Lease, so that the other replicas take this one's
// objects at once.
func (l *leaseMembership) release() {
	l.mu.Lock()
	mine := l.mine
	l.mu.Unlock()
	if mine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.RenewDeadline)
	defer cancel()
	uid := mine.UID
	err := l.client.CoordinationV1().Leases(l.cfg.Namespace).Delete(ctx, mine.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		l.logger.Error(err, "release the shard Lease: the other replicas take this one's objects when it expires", "lease", l.cfg.Namespace+"/"+mine.Name)
		return
	}
	l.logger.Info("shard Lease released", "lease", l.cfg.Namespace+"/"+mine.Name)
}
