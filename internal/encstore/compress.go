package encstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression says how a store compresses the encoded objects it keeps.
type Compression int

const (
	// S2Dict compresses each object with S2 (klauspost/compress's successor
	// of Snappy) and a dictionary trained on the first objects the store
	// receives (Options.DictSamples). Objects of one type repeat the same
	// field names, images, labels and env names, which a dictionary holds
	// once for all of them. It is the default: with a dictionary it keeps
	// Pods about as small as zstd does, and decompresses several times
	// faster, which keeps a cold read near the cost of the decode alone (see
	// doc.go).
	S2Dict Compression = iota
	// ZstdDict is S2Dict with zstd: about as small, slower to decompress.
	ZstdDict
	// Zstd compresses each object with zstd on its own, without a dictionary.
	Zstd
	// NoCompression keeps the encoded bytes as they are.
	NoCompression
)

func (c Compression) String() string {
	switch c {
	case ZstdDict:
		return "zstd-dict"
	case Zstd:
		return "zstd"
	case NoCompression:
		return "none"
	case S2Dict:
		return "s2-dict"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Every kept object starts with one byte that says how the rest is stored,
// so that objects kept before the dictionary was trained stay readable.
const (
	formatPlain    byte = iota // the codec's bytes as they are
	formatZstd                 // zstd, no dictionary
	formatZstdDict             // zstd with the store's dictionary
	formatS2                   // S2, no dictionary
	formatS2Dict               // S2 with the store's dictionary
)

// dictID names the store's dictionary in zstd frames. Each store has at most
// one dictionary and its own decoder, so the number only has to be non-zero.
const dictID = 1

// compressor compresses and decompresses the kept bytes of one store. It is
// safe for concurrent use.
type compressor struct {
	mode Compression
	// samples is the number of objects a dictionary is trained on, and
	// dictSize its largest size.
	samples  int
	dictSize int

	plain *zstdPair // zstd without a dictionary: Zstd, and ZstdDict when training failed
	// trained holds the encoder and decoder with the dictionary once it is
	// trained (ZstdDict); nil before.
	trained atomic.Pointer[zstdPair]
	// trainedS2 is the S2 dictionary once it is trained (S2Dict); nil before.
	trainedS2 atomic.Pointer[s2.Dict]

	mu sync.Mutex
	// collected are the first objects' encodings, until the dictionary is
	// trained (or training failed, see trainErr).
	collected [][]byte
	trainErr  error
	dict      []byte
}

type zstdPair struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newZstdPair(dict []byte) (*zstdPair, error) {
	eopts := []zstd.EOption{
		// The fastest level: with a dictionary it compresses Pods as well
		// as the default level, and several times faster (see doc.go).
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false), // the bytes never leave the process
		zstd.WithWindowSize(1 << 17),
		zstd.WithSingleSegment(true),
	}
	dopts := []zstd.DOption{zstd.IgnoreChecksum(true), zstd.WithDecoderLowmem(true)}
	if dict != nil {
		eopts = append(eopts, zstd.WithEncoderDict(dict))
		dopts = append(dopts, zstd.WithDecoderDicts(dict))
	}
	enc, err := zstd.NewWriter(nil, eopts...)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, dopts...)
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &zstdPair{enc: enc, dec: dec}, nil
}

func newCompressor(mode Compression, samples, dictSize int) (*compressor, error) {
	c := &compressor{mode: mode, samples: samples, dictSize: dictSize}
	if mode == NoCompression || mode == S2Dict {
		return c, nil
	}
	p, err := newZstdPair(nil)
	if err != nil {
		return nil, err
	}
	c.plain = p
	return c, nil
}

// compress returns what to keep for an object encoded as raw: a format byte
// and the (maybe compressed) bytes, in a slice of its own. In the dictionary
// modes the first objects are kept plain and collected to train the dictionary;
// train reports when enough were collected.
func (c *compressor) compress(raw []byte) (kept []byte, train bool) {
	switch c.mode {
	case NoCompression:
		return prefixed(formatPlain, raw), false
	case Zstd:
		return encodeExact(c.plain.enc, formatZstd, raw), false
	}
	if kept, ok := c.withDict(raw); ok {
		return kept, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trainErr != nil {
		return c.withoutDict(raw), false
	}
	kept = prefixed(formatPlain, raw)
	if len(c.collected) < c.samples {
		c.collected = append(c.collected, kept[1:])
	}
	return kept, len(c.collected) >= c.samples
}

// scratch holds compression output before it is copied to a slice of its
// exact size: EncodeAll grows its destination with append, which would leave
// each kept object with unused capacity.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func encodeExact(enc *zstd.Encoder, format byte, raw []byte) []byte {
	b := scratch.Get().(*[]byte)
	out := enc.EncodeAll(raw, append((*b)[:0], format))
	kept := make([]byte, len(out))
	copy(kept, out)
	if cap(out) <= 1<<20 {
		*b = out
		scratch.Put(b)
	}
	return kept
}

// withDict compresses raw with the trained dictionary, if there is one.
func (c *compressor) withDict(raw []byte) ([]byte, bool) {
	if c.mode == S2Dict {
		if d := c.trainedS2.Load(); d != nil {
			return s2Exact(d.Encode, formatS2Dict, raw), true
		}
		return nil, false
	}
	if p := c.trained.Load(); p != nil {
		return encodeExact(p.enc, formatZstdDict, raw), true
	}
	return nil, false
}

// withoutDict compresses raw when training failed.
func (c *compressor) withoutDict(raw []byte) []byte {
	if c.mode == S2Dict {
		return s2Exact(s2.Encode, formatS2, raw)
	}
	return encodeExact(c.plain.enc, formatZstd, raw)
}

func s2Exact(encode func(dst, src []byte) []byte, format byte, raw []byte) []byte {
	b := scratch.Get().(*[]byte)
	if n := s2.MaxEncodedLen(len(raw)); cap(*b) < n {
		*b = make([]byte, n)
	}
	out := encode((*b)[:cap(*b)], raw)
	kept := make([]byte, 1+len(out))
	kept[0] = format
	copy(kept[1:], out)
	if cap(*b) <= 1<<20 {
		scratch.Put(b)
	}
	return kept
}

func prefixed(format byte, raw []byte) []byte {
	kept := make([]byte, 1+len(raw))
	kept[0] = format
	copy(kept[1:], raw)
	return kept
}

// errFewSamples is why a dictionary was not trained: too few or too small objects.
var errFewSamples = errors.New("too few objects to train a dictionary")

// trainDict builds the dictionary from the collected objects. It returns
// false when it did not (already trained, or training failed: the store then
// compresses without a dictionary, and DictError says why).
func (c *compressor) trainDict() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trained.Load() != nil || c.trainedS2.Load() != nil || c.trainErr != nil || len(c.collected) == 0 {
		return false
	}
	samples := c.collected
	c.collected = nil
	if c.mode == S2Dict {
		d, err := dict.BuildS2Dict(samples, dict.Options{MaxDictSize: min(c.dictSize, s2.MaxDictSize), HashBytes: 6})
		var sd *s2.Dict
		if err == nil {
			if sd = s2.NewDict(d); sd == nil {
				err = errFewSamples
			}
		}
		if err != nil {
			c.trainErr = fmt.Errorf("train an S2 dictionary on %d objects: %w", len(samples), err)
			return false
		}
		c.dict = d
		c.trainedS2.Store(sd)
		return true
	}
	d, err := dict.BuildZstdDict(samples, dict.Options{
		MaxDictSize: c.dictSize,
		HashBytes:   6,
		ZstdDictID:  dictID,
		ZstdLevel:   zstd.SpeedFastest,
	})
	if err == nil && len(d) == 0 {
		err = errFewSamples
	}
	var p *zstdPair
	if err == nil {
		p, err = newZstdPair(d)
	}
	if err != nil {
		c.trainErr = fmt.Errorf("train a zstd dictionary on %d objects: %w", len(samples), err)
		return false
	}
	c.dict = d
	c.trained.Store(p)
	return true
}

// recompress returns kept compressed with the dictionary when it is plain and
// a dictionary was trained (or compressed without one when training failed);
// otherwise kept itself.
func (c *compressor) recompress(kept []byte) []byte {
	if (c.mode != ZstdDict && c.mode != S2Dict) || kept[0] != formatPlain {
		return kept
	}
	if out, ok := c.withDict(kept[1:]); ok {
		return out
	}
	c.mu.Lock()
	failed := c.trainErr != nil
	c.mu.Unlock()
	if failed {
		return c.withoutDict(kept[1:])
	}
	return kept
}

// decompress returns the codec's bytes of a kept object, in buf's storage
// when they had to be decompressed, or aliasing kept when they were stored
// plain.
func (c *compressor) decompress(kept, buf []byte) ([]byte, error) {
	if len(kept) == 0 {
		return nil, errors.New("empty record")
	}
	switch kept[0] {
	case formatPlain:
		return kept[1:], nil
	case formatZstd:
		out, err := c.plain.dec.DecodeAll(kept[1:], buf[:0])
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	case formatS2Dict:
		d := c.trainedS2.Load()
		if d == nil {
			return nil, errors.New("a record compressed with a dictionary the store does not have")
		}
		out, err := d.Decode(buf[:cap(buf)], kept[1:])
		if err != nil {
			return nil, fmt.Errorf("s2 with dictionary: %w", err)
		}
		return out, nil
	case formatS2:
		out, err := s2.Decode(buf[:cap(buf)], kept[1:])
		if err != nil {
			return nil, fmt.Errorf("s2: %w", err)
		}
		return out, nil
	case formatZstdDict:
		p := c.trained.Load()
		if p == nil {
			return nil, errors.New("a record compressed with a dictionary the store does not have")
		}
		out, err := p.dec.DecodeAll(kept[1:], buf[:0])
		if err != nil {
			return nil, fmt.Errorf("zstd with dictionary: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown record format %d", kept[0])
}

// dictionary returns the trained dictionary (nil before) and why training
// failed, if it did.
func (c *compressor) dictionary() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dict, c.trainErr
}
