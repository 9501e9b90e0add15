package bench

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// The leanstore modes: cachetune's drop-in factories, with the same stripping as
// the client-go modes beside them, so that each pair differs only in the library.
// The default set keeps the stripping the memory targets are about (managedFields
// and last-applied) and the lean modes; --modes all adds the rest.
func init() {
	RegisterBothListPaths(Mode{Name: "leanstore/typed-strip-mf", Title: "leanstore typed, strip managedFields",
		Supports: BuiltinOnly, Start: startLeanTyped(), Dynamic: startLeanDynamic(), Extra: true})
	RegisterBothListPaths(Mode{Name: "leanstore/typed-strip-mf-la", Title: "leanstore typed, strip managedFields and last-applied",
		Supports: BuiltinOnly, Start: startLeanTyped(leanstore.WithStripLastApplied()), Dynamic: startLeanDynamic(leanstore.WithStripLastApplied())})
	RegisterBothListPaths(Mode{Name: "leanstore/typed-lean", Title: "leanstore typed, strip managedFields and last-applied, share equal parts",
		Supports: BuiltinOnly, Start: startLeanTyped(leanstore.WithStripLastApplied(), leanstore.WithSharing(true)),
		Dynamic: startLeanDynamic(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))})
	// What the safe defaults cost and buy, beside the mode they change:
	// interning off (it is on by default), and the heap bound off (on by
	// default where the process has no GC policy of its own).
	RegisterBothListPaths(Mode{Name: "leanstore/typed-strip-mf-la-nointern", Title: "leanstore typed, strip managedFields and last-applied, no interning",
		Supports: BuiltinOnly, Start: startLeanTyped(leanstore.WithStripLastApplied(), leanstore.WithInterning(false)),
		Dynamic: startLeanDynamic(leanstore.WithStripLastApplied(), leanstore.WithInterning(false)), Extra: true})
	RegisterBothListPaths(Mode{Name: "leanstore/typed-strip-mf-la-nobound", Title: "leanstore typed, strip managedFields and last-applied, no heap bound",
		Supports: BuiltinOnly, Start: startLeanTyped(leanstore.WithStripLastApplied(), leanstore.WithHeapBound(0)),
		Dynamic: startLeanDynamic(leanstore.WithStripLastApplied(), leanstore.WithHeapBound(0)), Extra: true})
	RegisterBothListPaths(Mode{Name: "leanstore/metadata-strip-mf", Title: "leanstore metadata-only, strip managedFields",
		Start: startLeanMetadata(), Extra: true})
	RegisterBothListPaths(Mode{Name: "leanstore/metadata-strip-mf-la", Title: "leanstore metadata-only, strip managedFields and last-applied",
		Start: startLeanMetadata(leanstore.WithStripLastApplied())})
	RegisterBothListPaths(Mode{Name: "leanstore/metadata-lean", Title: "leanstore metadata-only, strip managedFields and last-applied, share equal parts",
		Start: startLeanMetadata(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))})
	// The encoded store (WithEncodedStore): objects kept as their stripped
	// protobuf, compressed with S2 and a trained dictionary, decoded on
	// every read. Extra: its reads cost a decode, which the reconcile
	// figures show beside the other modes'.
	encoded := leanstore.WithEncodedStore(leanstore.EncodedStore{})
	RegisterBothListPaths(Mode{Name: "leanstore/typed-encoded", Title: "leanstore typed, strip managedFields and last-applied, encoded store",
		Supports: BuiltinOnly, Start: startLeanTyped(leanstore.WithStripLastApplied(), encoded),
		Dynamic: startLeanDynamic(leanstore.WithStripLastApplied(), encoded), Extra: true})
	RegisterBothListPaths(Mode{Name: "leanstore/metadata-encoded", Title: "leanstore metadata-only, strip managedFields and last-applied, encoded store",
		Start: startLeanMetadata(leanstore.WithStripLastApplied(), encoded), Extra: true})
}

func streamingOption(env Env) leanstore.Option {
	if env.Streaming {
		return leanstore.WithStreamingLists(leanstore.StreamingAuto)
	}
	return leanstore.WithStreamingLists(leanstore.StreamingOff)
}

func startLeanTyped(opts ...leanstore.Option) func(context.Context, Env) (Cache, error) {
	return func(ctx context.Context, env Env) (Cache, error) {
		cs, err := kubernetes.NewForConfig(env.Config)
		if err != nil {
			return Cache{}, err
		}
		all := append([]leanstore.Option{leanstore.WithNamespace(env.Namespace), streamingOption(env)}, opts...)
		f := leanstore.NewSharedInformerFactory(cs, 0, all...)
		gi, err := f.ForResource(env.Resource)
		if err != nil {
			return Cache{}, fmt.Errorf("leanstore informer for %s: %w", env.Resource.Resource, err)
		}
		return startLean(ctx, env, f.StartWithContext, f.Shutdown, gi.Informer().(*leanstore.Informer))
	}
}

// startLeanDynamic is leanstore's dynamic informer, for custom resources beside
// typed ones.
func startLeanDynamic(opts ...leanstore.Option) func(context.Context, Env) (Cache, error) {
	return func(ctx context.Context, env Env) (Cache, error) {
		dc, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			return Cache{}, err
		}
		all := append([]leanstore.Option{leanstore.WithNamespace(env.Namespace), streamingOption(env)}, opts...)
		f := leanstore.NewDynamicSharedInformerFactory(dc, 0, all...)
		inf := f.ForResource(env.Resource).Informer().(*leanstore.Informer)
		return startLean(ctx, env, f.StartWithContext, f.Shutdown, inf)
	}
}

func startLeanMetadata(opts ...leanstore.Option) func(context.Context, Env) (Cache, error) {
	return func(ctx context.Context, env Env) (Cache, error) {
		mc, err := metadata.NewForConfig(env.Config)
		if err != nil {
			return Cache{}, err
		}
		all := append([]leanstore.Option{leanstore.WithNamespace(env.Namespace), streamingOption(env)}, opts...)
		f := leanstore.NewMetadataSharedInformerFactory(mc, 0, all...)
		inf := f.ForResource(env.Resource).Informer().(*leanstore.Informer)
		return startLean(ctx, env, f.StartWithContext, f.Shutdown, inf)
	}
}

func startLean(ctx context.Context, env Env, start func(context.Context), shutdown func(), inf *leanstore.Informer) (Cache, error) {
	if _, err := inf.AddEventHandler(env.Handler); err != nil {
		return Cache{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	start(ctx)
	return Cache{
		HasSynced:     inf.HasSynced,
		Len:           func() int { return len(inf.GetStore().ListKeys()) },
		ListPath:      func() string { return string(inf.Status().ListPath) },
		Lists:         func() int { return inf.Status().Lists },
		ReconcileList: listerRead(inf.GetIndexer()),
		HeapBound: func() (int, string) {
			st := inf.Status()
			return int(st.ForcedGCs), st.HeapBoundOff
		},
		Stop: func() { cancel(); shutdown() },
	}, nil
}
