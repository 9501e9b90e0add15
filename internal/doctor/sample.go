package doctor

import (
	"fmt"
	"math/rand/v2"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// sampler keeps a uniform random sample of up to k objects from a list read
// page by page (reservoir sampling), decoding only the objects it keeps where
// it can. Its seed is fixed, so that two runs on the same objects pick the
// same sample.
type sampler struct {
	k    int
	seen int
	rng  *rand.Rand
	objs []runtime.Object
}

func newSampler(k int) *sampler {
	return &sampler{k: k, rng: rand.New(rand.NewPCG(1, 2))}
}

// offer considers the next object of the list; decode is called only when it
// is kept.
func (s *sampler) offer(decode func() (runtime.Object, error)) error {
	s.seen++
	slot := len(s.objs)
	if slot >= s.k {
		if slot = s.rng.IntN(s.seen); slot >= s.k {
			return nil
		}
	}
	obj, err := decode()
	if err != nil {
		return err
	}
	if slot == len(s.objs) {
		s.objs = append(s.objs, obj)
	} else {
		s.objs[slot] = obj
	}
	return nil
}

// protobufSizes accumulates the protobuf sizes of built-in objects.
type protobufSizes struct {
	objects int
	total   int64
}

// protobufPage decodes one protobuf page of a built-in resource into typed
// objects, as client-go's typed informers decode them, measures each and
// offers it to the sample. It returns the page's continue token.
func protobufPage(raw []byte, pb *protobufSizes, smp *sampler) (string, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return "", fmt.Errorf("decode protobuf list: %w", err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return "", err
	}
	for _, it := range items {
		sized, ok := it.(interface{ Size() int })
		if !ok {
			return "", fmt.Errorf("%T has no protobuf size", it)
		}
		pb.objects++
		pb.total += int64(sized.Size())
		if err := smp.offer(func() (runtime.Object, error) { return detach(it), nil }); err != nil {
			return "", err
		}
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return "", err
	}
	return lm.GetContinue(), nil
}

// jsonSamplePage measures one JSON page of a resource client-go has no type
// for (a custom resource, or a kind of an extension API) and offers its items
// to the sample, decoded as client-go's dynamic informers decode them: into a
// map, with apiVersion and kind set from the list where the server left them
// out, as unstructured's list decoding does.
func jsonSamplePage(raw []byte, s *sizes, smp *sampler, gvk schema.GroupVersionKind) (string, error) {
	p, err := parseJSONPage(raw)
	if err != nil {
		return "", err
	}
	for _, it := range p.Items {
		if err := s.add(it); err != nil {
			return "", err
		}
		if err := smp.offer(func() (runtime.Object, error) {
			m := map[string]interface{}{}
			if err := utiljson.Unmarshal(it, &m); err != nil {
				return nil, fmt.Errorf("decode item: %w", err)
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetKind() == "" && u.GetAPIVersion() == "" {
				u.SetGroupVersionKind(gvk)
			}
			return u, nil
		}); err != nil {
			return "", err
		}
	}
	return p.Metadata.Continue, nil
}

// jsonSizesPage measures one JSON page.
func jsonSizesPage(raw []byte, s *sizes) (string, error) {
	p, err := parseJSONPage(raw)
	if err != nil {
		return "", err
	}
	for _, it := range p.Items {
		if err := s.add(it); err != nil {
			return "", err
		}
	}
	return p.Metadata.Continue, nil
}

// detach moves a list item into an allocation of its own, as client-go's
// reflector does (meta.ExtractListWithAlloc): the item's struct is copied,
// what it references is not. An item left in the list's Items array would
// keep the whole page alive.
func detach(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return c.Interface().(runtime.Object)
}
