package encstore_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
)

// TestReadsDuringWritesAndTraining reads from several goroutines while one
// writes, across the dictionary's training, with a small hot cache: run with
// -race. Every read must return a whole object of a version that was written.
// With SharedReads the readers hold the hot cache's objects themselves, which
// the writes must leave alone.
func TestReadsDuringWritesAndTraining(t *testing.T) {
	for _, tc := range []struct {
		c      encstore.Compression
		shared bool
	}{{encstore.ZstdDict, false}, {encstore.S2Dict, false}, {encstore.S2Dict, true}} {
		name := tc.c.String()
		if tc.shared {
			name += "-shared-reads"
		}
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t, encstore.Options{Compression: tc.c, DictSamples: 32, HotCacheBytes: 64 << 10, SharedReads: tc.shared})
			pods := storedPods(80, "")
			done := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for r := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-done:
							return
						default:
						}
						p := pods[(i*31+r)%len(pods)]
						obj, exists, err := s.GetByKey(keyOf(p))
						if err == nil && exists && (obj.(*corev1.Pod).Name != p.Name || len(obj.(*corev1.Pod).Labels) != len(p.Labels)) {
							err = fmt.Errorf("read %s for %s", obj.(*corev1.Pod).Name, p.Name)
						}
						if err == nil && i%20 == 0 {
							_, err = s.ByIndex(cache.NamespaceIndex, p.Namespace)
						}
						if err == nil && i%50 == 0 {
							_, err = s.ListErr()
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			for round := range 2 {
				for _, p := range pods {
					q := p.DeepCopy()
					q.ResourceVersion = fmt.Sprintf("%d%s", round, p.ResourceVersion)
					if err := s.Update(q); err != nil {
						t.Error(err)
					}
				}
			}
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, p := range pods {
				if got := getPod(t, s, keyOf(p)); got.ResourceVersion != "1"+p.ResourceVersion {
					t.Fatalf("%s at %s after the writes, want 1%s", p.Name, got.ResourceVersion, p.ResourceVersion)
				}
			}
			// No object stays uncompressed (about 4.6 KB) once the
			// dictionary exists (about 1 KB with it).
			if st := s.Stats(); st.DictBytes == 0 || st.KeptBytes/int64(st.Objects) > 2500 {
				t.Fatalf("%d bytes kept per object, dictionary of %d bytes: objects were left uncompressed", st.KeptBytes/int64(st.Objects), st.DictBytes)
			}
		})
	}
}

// TestUpsertsOldObjectIsNotReadByOthers: Upsert hands the replaced object to
// its caller, who owns it (an informer gives it to update handlers, which may
// change it). When the hot cache holds that object, a reader may be copying it
// at that moment; the caller's changes must not race with that copy. Run with
// -race: the race detector reports the change and the copy when both touch the
// same object.
func TestUpsertsOldObjectIsNotReadByOthers(t *testing.T) {
	s, _ := newStore(t, encstore.Options{})
	p := storedPod(1, "")
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	key := keyOf(p)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := s.GetByKey(key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 500 {
		next := p.DeepCopy()
		next.ResourceVersion = fmt.Sprint(1000 + i)
		_, _, old, err := s.Upsert(next)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := old()
		if err != nil {
			t.Fatal(err)
		}
		owned := obj.(*corev1.Pod)
		owned.Spec.NodeName = "changed by the caller"
		owned.Labels["changed"] = "by the caller"
	}
}
