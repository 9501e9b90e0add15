package doctor

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Thresholds below which a finding is not worth a recommendation.
const (
	// minShare is the share of the objects' JSON a part must take to be worth
	// stripping.
	minShare = 0.10
	// minSaving is the smallest projected saving worth a change of code.
	minSaving = 1 << 20
	// minListBytes is the whole-list response above which its start-up and
	// re-list spike is worth avoiding.
	minListBytes = 8 << 20
	// minScopeHeap is the cache size above which a scope over several
	// namespaces is worth questioning.
	minScopeHeap = 16 << 20
)

// The sections of docs/troubleshooting.md the recommendations point to.
const (
	guideMemory = "docs/troubleshooting.md#memory-keeps-growing"
	guideLoop   = "docs/troubleshooting.md#reconcile-loop"
	guideStuck  = "docs/troubleshooting.md#stuck-terminating"
	guideWatch  = "docs/troubleshooting.md#watch-stops-recovering"
)

// recommend turns the report's findings into recommendations, resource by
// resource: access first, then what the detectors found, then memory, in the
// order a controller author would apply the fixes (each saving counted on top
// of the ones before: managedFields, last-applied, sharing), then the
// alternatives (metadata-only, streaming lists, a narrower scope).
func recommend(r *Report) []Recommendation {
	var out []Recommendation
	for _, res := range r.Resources {
		out = append(out, accessRecommendations(r, res)...)
		out = append(out, churnRecommendations(res)...)
		out = append(out, stuckRecommendations(r, res)...)
		out = append(out, memoryRecommendations(r, res)...)
	}
	return out
}

func accessRecommendations(r *Report, res Resource) []Recommendation {
	if res.Access.List && (res.Access.Watch || !res.Access.Checked) {
		return nil // a list that worked without a review: watch unknown
	}
	var verbs []string
	if !res.Access.List {
		verbs = append(verbs, "list")
	}
	if !res.Access.Watch {
		verbs = append(verbs, "watch")
	}
	where := "all namespaces"
	switch {
	case !res.Namespaced:
		where = "the cluster"
	case r.Namespace != "":
		where = "namespace " + r.Namespace
	}
	role := "a Role in the namespace"
	if !res.Namespaced || r.Namespace == "" {
		role = "a ClusterRole and ClusterRoleBinding"
	}
	return []Recommendation{{
		Resource: res.Resource, Symptom: WatchNotRecovering,
		Cause: fmt.Sprintf("RBAC: the identity may not %s %s in %s; an informer retries for ever and never syncs",
			strings.Join(verbs, " or "), res.Resource, where),
		Fix: fmt.Sprintf("grant list and watch on %s with %s; leanstore's factory Check (readiness) reports the informer degraded instead of retrying in silence",
			res.Resource, role),
		Guide: guideWatch,
	}}
}

func churnRecommendations(res Resource) []Recommendation {
	if res.Churn == nil {
		return nil
	}
	var out []Recommendation
	for _, f := range res.Churn.Findings {
		obj := objectName(f.Namespace, f.Name)
		switch f.Kind {
		case "ping-pong":
			out = append(out, Recommendation{
				Resource: res.Resource, Symptom: ReconcileLoop,
				Cause: fmt.Sprintf("two controllers fighting over a field: on %s, %s", obj, findingText(f)),
				Fix:   "give each field one owner: server-side apply with each controller's own field manager and without Force, so that the second writer gets a 409 conflict instead of a silent takeover",
				Guide: guideLoop,
			})
		default:
			out = append(out, Recommendation{
				Resource: res.Resource, Symptom: ReconcileLoop,
				Cause: fmt.Sprintf("non-deterministic writes: %s %s", obj, findingText(f)),
				Fix:   "write only values derived from the spec and the world, skip writes that change nothing, and reconcile on spec and finalizer changes only: predicate.Handler(predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged()), handler)",
				Guide: guideLoop,
			})
		}
	}
	return out
}

func stuckRecommendations(r *Report, res Resource) []Recommendation {
	if len(res.Stuck) == 0 {
		return nil
	}
	var finalizers []string
	for _, s := range res.Stuck {
		for _, f := range s.Finalizers {
			if !slices.Contains(finalizers, f) {
				finalizers = append(finalizers, f)
			}
		}
	}
	waiting := "no finalizer (for a Pod: a kubelet that never confirmed)"
	if len(finalizers) > 0 {
		waiting = "finalizers " + strings.Join(finalizers, ", ")
	}
	oldest := res.Stuck[0]
	after := time.Duration(r.Settings.StuckAfterSeconds * float64(time.Second))
	return []Recommendation{{
		Resource: res.Resource, Symptom: StuckTerminating,
		Cause: fmt.Sprintf("%s Terminating for more than %s, waiting for %s (oldest: %s, %s)",
			plural(len(res.Stuck), "object"), after, waiting, objectName(oldest.Namespace, oldest.Name), age(oldest.AgeSeconds)),
		Fix:   "the controller that owns each finalizer must finish its cleanup and remove it: make the cleanup succeed eventually, and let finalizer events through (predicate.FinalizersChanged()); in an emergency, kubectl patch ... --type=merge -p '{\"metadata\":{\"finalizers\":null}}' skips the cleanup",
		Guide: guideStuck,
	}}
}

func memoryRecommendations(r *Report, res Resource) []Recommendation {
	if len(res.Projections) <= projMetadataStripped {
		return nil
	}
	p := res.Projections
	base := float64(p[projPlain].Total)
	rec := func(cause, fix string, saving int64) Recommendation {
		share := 0.0
		if base > 0 {
			share = float64(saving) / base
		}
		return Recommendation{Resource: res.Resource, Symptom: MemoryGrowth, Cause: cause, Fix: fix,
			Saving: saving, SavingShare: share, Guide: guideMemory}
	}
	var out []Recommendation

	factory, withClientGo := "leanstore.NewSharedInformerFactory", "informers.WithTransform(leanstore.Transform())"
	if !res.BuiltIn {
		factory, withClientGo = "leanstore.NewDynamicSharedInformerFactory", "informer.SetTransform(leanstore.Transform())"
	}
	if s := p[projPlain].Total - p[projStripManagedFields].Total; res.ManagedFields.Share >= minShare && s >= minSaving {
		out = append(out, rec(
			fmt.Sprintf("large objects in the store: managedFields are %s of each object's JSON", percent(res.ManagedFields.Share)),
			fmt.Sprintf("%s strips managedFields by default; with client-go's own informers: %s", factory, withClientGo), s))
	}
	if s := p[projStripManagedFields].Total - p[projStripLastApplied].Total; res.LastApplied.Share >= minShare && s >= minSaving {
		out = append(out, rec(
			fmt.Sprintf("large objects in the store: kubectl's last-applied annotation is %s of each object's JSON", percent(res.LastApplied.Share)),
			"leanstore.WithStripLastApplied(), on top of stripping managedFields", s))
	}
	if s := p[projStripLastApplied].Total - p[projLean].Total; base > 0 && float64(s)/base >= minShare && s >= minSaving {
		out = append(out, rec(
			"large objects in the store: the objects repeat each other's parts (containers, env, volumes)",
			"leanstore.WithSharing(true), on top of stripping managedFields and last-applied", s))
	}
	if s := p[projPlain].Total - p[projMetadataStripped].Total; s >= minSaving {
		out = append(out, rec(
			"large objects in the store: a controller that reads only metadata (labels, owners, finalizers) caches whole objects",
			"leanstore.NewMetadataSharedInformerFactory (metadata-only, managedFields stripped by default), if the controller reads nothing else", s))
	}

	peak := func(rec Recommendation) Recommendation {
		rec.Peak, rec.SavingShare = true, 0
		return rec
	}
	wire := res.JSON
	if res.Protobuf != nil {
		wire = *res.Protobuf
	}
	if wire.Total >= minListBytes {
		switch r.StreamingLists.Supported {
		case Unsupported:
			page := int64(float64(r.Settings.PageSize) * wire.PerObject)
			out = append(out, peak(rec(
				fmt.Sprintf("initial list allocation: the server does not serve streaming lists, and client-go's informers LIST with resourceVersion 0, which ignores the page size: a %s response of all %d objects is held at once, at start and at every re-list",
					mib(wire.Total), res.Objects),
				fmt.Sprintf("leanstore pages its LIST and strips each page before the next: leanstore.WithPageSize(%d)", r.Settings.PageSize),
				wire.Total-page)))
		default:
			out = append(out, peak(rec(
				fmt.Sprintf("initial list allocation: a LIST of all %d objects is a %s response held at once next to the decoded objects, at start and at every re-list; a streaming list decodes one object at a time",
					res.Objects, mib(wire.Total)),
				"streaming lists: leanstore.WithStreamingLists(leanstore.StreamingAuto), the default; with client-go, keep WatchListClient on (the default in v0.37) and make every transform accept its own output, or the reflector falls back to LIST",
				wire.Total)))
		}
	}

	if res.Namespaced && r.Namespace == "" && res.Namespaces > 1 && base >= minScopeHeap && len(res.TopNamespaces) > 0 {
		top := res.TopNamespaces[0]
		s := int64(base * (1 - float64(top.Objects)/float64(res.Objects)))
		out = append(out, rec(
			fmt.Sprintf("watch scope too wide: %d objects in %d namespaces, cached whole; the fullest, %s, holds %d", res.Objects, res.Namespaces, top.Namespace, top.Objects),
			"narrow the cache to what the controller reconciles: leanstore.WithNamespace(ns), leanstore.WithLabelSelector(selector) or leanstore.WithFieldSelector(selector); the saving shown is what caching the fullest namespace alone would save",
			s))
	}
	return out
}

func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func percent(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func age(s float64) string {
	return (time.Duration(s) * time.Second).Round(time.Second).String()
}
