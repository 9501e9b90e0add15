package bench

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Mode is one way of building an informer cache that cachebench measures. A mode
// is a constructor and a few facts about it; adding one is a Register call.
type Mode struct {
	// Name is unique and stable, slash-separated from the general to the
	// particular, e.g. "client-go/typed/stream". --modes matches it with globs.
	Name string
	// Title is a short human description, e.g. "client-go typed, protobuf".
	Title string
	// Streaming asks for streaming lists (WatchList). The child sets
	// KUBE_FEATURE_WatchListClient from it before client-go reads the gate.
	Streaming bool
	// Supports reports whether the mode can cache a resource; nil means every
	// resource.
	Supports func(schema.GroupVersionResource) bool
	// Start builds the cache and starts it; it must not wait for the sync. The
	// cache stops when ctx ends or when Cache.Stop is called.
	Start func(ctx context.Context, env Env) (Cache, error)
	// Dynamic, when set, starts the same library's dynamic informer with the
	// mode's options, for a resource Supports rejects (a custom resource
	// beside typed built-in ones) when several resources are cached together,
	// as a controller caches its CRD with a dynamic informer next to typed
	// ones.
	Dynamic func(ctx context.Context, env Env) (Cache, error)
	// Extra leaves the mode out of the default set (cachebench run with no
	// --modes), which must finish within a few minutes: it runs when --modes
	// names it, or with --modes all.
	Extra bool
	// Program, when set, is the program that measures the mode in place of
	// `cachebench child`: a mode whose library the root module must not
	// require (controller-runtime) is implemented in a program of its own
	// module, which gives the mode its Start and Dynamic (Implement) and
	// calls ServeChild. The Start and Dynamic registered here only say so.
	Program *Program
}

// Env is what a mode's constructor gets.
type Env struct {
	// Config reaches the server (through the parent's fault proxy) and counts
	// the bytes received; modes must build their clients from it.
	Config *rest.Config
	// Namespace to cache; empty means all namespaces (and is what a
	// cluster-scoped resource gets).
	Namespace string
	// Resource to cache, e.g. pods.
	Resource schema.GroupVersionResource
	// Handler must be added to the informer: it counts adds and updates, which
	// is how the child sees that a re-list has been delivered.
	Handler cache.ResourceEventHandler
	// Streaming repeats Mode.Streaming for constructors that pass it on
	// explicitly rather than through client-go's feature gate.
	Streaming bool
}

// Cache is a started informer cache as the child sees it.
type Cache struct {
	// HasSynced reports whether the initial list has been delivered.
	HasSynced func() bool
	// Len is the number of objects in the store.
	Len func() int
	// ListPath reports the list path the library says it took ("streaming",
	// "list"); nil or "" means the library does not say.
	ListPath func() string
	// Lists, when set, counts the lists the library has completed: a forced
	// re-list is then complete when it grows, since such a library delivers
	// only the objects that changed rather than an update for every object.
	Lists func() int
	// ReconcileList, when set, reads every cached object once the way a
	// reconcile reads the cache (a lister, a controller-runtime client), calls
	// held while the objects read are still referenced, and returns how many
	// it read: what one such read allocates is measured.
	ReconcileList func(ctx context.Context, held func()) (int, error)
	// HeapBound, when set, reports the collections the library forced to
	// bound the heap during its lists so far, and why it forced none when its
	// bound is off ("" when it applies): where leanstore's heap bound engaged.
	HeapBound func() (forced int, off string)
	// Stop stops the informers and waits for them to end.
	Stop func()
}

// Resource-selection helpers for Mode.Supports.
var builtinResources = map[schema.GroupVersionResource]bool{
	{Version: "v1", Resource: "pods"}:       true,
	{Version: "v1", Resource: "configmaps"}: true,
	{Version: "v1", Resource: "secrets"}:    true,
	{Version: "v1", Resource: "nodes"}:      true,
}

// ResourceRef is a resource to cache and the namespace to cache it in (""
// for all namespaces, and for a cluster-scoped resource).
type ResourceRef struct {
	schema.GroupVersionResource
	Namespace string `json:"namespace,omitempty"`
}

// startCache starts the mode's cache of one resource: with Start when the
// mode supports the resource, with Dynamic otherwise.
func (m Mode) startCache(ctx context.Context, env Env) (Cache, error) {
	if m.Supports == nil || m.Supports(env.Resource) {
		return m.Start(ctx, env)
	}
	if m.Dynamic != nil {
		return m.Dynamic(ctx, env)
	}
	return Cache{}, fmt.Errorf("mode %s cannot cache %s", m.Name, env.Resource.Resource)
}

// CanCache reports whether the mode caches gvr, with Start or with Dynamic.
func (m Mode) CanCache(gvr schema.GroupVersionResource, together bool) bool {
	return m.Supports == nil || m.Supports(gvr) || (together && m.Dynamic != nil)
}

// joined combines the caches of several resources into one: synced when all
// are, the sum of their lengths and of their lists.
func joined(cs []Cache) Cache {
	if len(cs) == 1 {
		return cs[0]
	}
	out := Cache{
		HasSynced: func() bool {
			for _, c := range cs {
				if !c.HasSynced() {
					return false
				}
			}
			return true
		},
		Len: func() int {
			n := 0
			for _, c := range cs {
				n += c.Len()
			}
			return n
		},
		ListPath: func() string {
			var paths []string
			for _, c := range cs {
				if c.ListPath != nil {
					if p := c.ListPath(); p != "" && !slices.Contains(paths, p) {
						paths = append(paths, p)
					}
				}
			}
			return strings.Join(paths, ",")
		},
		Stop: func() {
			for _, c := range cs {
				c.Stop()
			}
		},
	}
	lists := true
	for _, c := range cs {
		lists = lists && c.Lists != nil
	}
	if lists {
		out.Lists = func() int {
			n := 0
			for _, c := range cs {
				n += c.Lists()
			}
			return n
		}
	}
	if !slices.ContainsFunc(cs, func(c Cache) bool { return c.HeapBound == nil }) {
		out.HeapBound = func() (int, string) {
			forced, off := 0, ""
			for _, c := range cs {
				f, o := c.HeapBound()
				forced, off = forced+f, cmp.Or(off, o)
			}
			return forced, off
		}
	}
	if !slices.ContainsFunc(cs, func(c Cache) bool { return c.ReconcileList == nil }) {
		out.ReconcileList = func(ctx context.Context, held func()) (int, error) { return listAll(ctx, cs, held) }
	}
	return out
}

// listAll reads every cache in turn, each inside the previous one's held, so
// that all the objects read are referenced together when held is called, as
// in a reconcile that reads several resources.
func listAll(ctx context.Context, cs []Cache, held func()) (int, error) {
	if len(cs) == 0 {
		held()
		return 0, nil
	}
	var rest int
	var restErr error
	n, err := cs[0].ReconcileList(ctx, func() { rest, restErr = listAll(ctx, cs[1:], held) })
	if err == nil {
		err = restErr
	}
	return n + rest, err
}

// BuiltinOnly is a Mode.Supports for modes that need a typed client: the
// resources of cachebench's dataset that client-go's clientset knows.
func BuiltinOnly(gvr schema.GroupVersionResource) bool { return builtinResources[gvr] }

var registry struct {
	sync.Mutex
	modes []Mode
}

// Register adds a mode. It panics on a duplicate or incomplete mode: modes are
// registered from init functions, where that is a programming error.
func Register(m Mode) {
	if m.Name == "" || m.Start == nil {
		panic(fmt.Sprintf("bench: mode %q needs a name and a Start function", m.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	for _, o := range registry.modes {
		if o.Name == m.Name {
			panic(fmt.Sprintf("bench: mode %q registered twice", m.Name))
		}
	}
	registry.modes = append(registry.modes, m)
}

// RegisterBothListPaths registers m twice: as m.Name+"/stream" with streaming
// lists and as m.Name+"/list" with plain LIST requests. Titles get ", streaming"
// and ", LIST".
func RegisterBothListPaths(m Mode) {
	s, l := m, m
	s.Name, s.Title, s.Streaming = m.Name+"/stream", m.Title+", streaming", true
	l.Name, l.Title, l.Streaming = m.Name+"/list", m.Title+", LIST", false
	Register(s)
	Register(l)
}

// markExtra leaves registered modes out of the default set (see Mode.Extra).
func markExtra(names ...string) {
	registry.Lock()
	defer registry.Unlock()
	for _, n := range names {
		found := false
		for i := range registry.modes {
			if registry.modes[i].Name == n {
				registry.modes[i].Extra, found = true, true
			}
		}
		if !found {
			panic(fmt.Sprintf("bench: no mode %q to mark extra", n))
		}
	}
}

// Modes returns every registered mode in registration order.
func Modes() []Mode {
	registry.Lock()
	defer registry.Unlock()
	return append([]Mode(nil), registry.modes...)
}

// Lookup returns the mode with this exact name.
func Lookup(name string) (Mode, bool) {
	for _, m := range Modes() {
		if m.Name == name {
			return m, true
		}
	}
	return Mode{}, false
}

// Select returns the modes matching a comma-separated list of names or globs
// ("*" matches any text including "/", "?" one character), in registration
// order. An empty list selects every mode. A pattern that matches nothing is an
// error, so that a typo is not a silently shorter run.
func Select(patterns string) ([]Mode, error) { return selectModes(patterns, false) }

// SelectAsGiven is Select in the order of the patterns: each pattern's modes
// in registration order, and a mode two patterns match at the place of the
// first. A run in this order can put the modes it compares side by side in
// time, so that the server's drift over a long run falls on both.
func SelectAsGiven(patterns string) ([]Mode, error) { return selectModes(patterns, true) }

func selectModes(patterns string, asGiven bool) ([]Mode, error) {
	all := Modes()
	switch strings.TrimSpace(patterns) {
	case "":
		var out []Mode
		for _, m := range all {
			if !m.Extra {
				out = append(out, m)
			}
		}
		return out, nil
	case "all":
		return all, nil
	}
	picked := make([]bool, len(all))
	var given []Mode
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		re := globRegexp(p)
		n := 0
		for i, m := range all {
			if re.MatchString(m.Name) {
				if !picked[i] {
					given = append(given, m)
				}
				picked[i] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no mode matches %q (cachebench run --list-modes lists them)", p)
		}
	}
	if asGiven {
		return given, nil
	}
	var out []Mode
	for i, m := range all {
		if picked[i] {
			out = append(out, m)
		}
	}
	return out, nil
}

// globRegexp turns a glob into an anchored regexp.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
