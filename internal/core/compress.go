package core

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A Compressor compresses entry payloads. Implementations must be safe for
// concurrent use.
type Compressor interface {
	Name() string
	Compress(src []byte) ([]byte, error)
	Decompress(src []byte) ([]byte, error)
}

// maxDecompressed bounds the size of a decompressed payload, so a corrupt or
// hostile entry cannot exhaust memory.
const maxDecompressed = 64 << 20

// Gzip compresses with compress/gzip at the default level.
var Gzip Compressor = gzipCompressor{}

// Zstd compresses with Zstandard (github.com/klauspost/compress/zstd).
var Zstd Compressor = &zstdCompressor{}

// LookupCompressor returns the built-in compressor called name.
func LookupCompressor(name string) (Compressor, error) {
	switch name {
	case "gzip":
		return Gzip, nil
	case "zstd":
		return Zstd, nil
	}
	return nil, fmt.Errorf("unknown compression %q (known: gzip, zstd)", name)
}

type gzipCompressor struct{}

func (gzipCompressor) Name() string { return "gzip" }

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func (gzipCompressor) Compress(src []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (gzipCompressor) Decompress(src []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("decompressed payload exceeds %d bytes", maxDecompressed)
	}
	return out, nil
}

type zstdCompressor struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

func (*zstdCompressor) Name() string { return "zstd" }

func (z *zstdCompressor) init() error {
	z.once.Do(func() {
		z.enc, z.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if z.err != nil {
			return
		}
		z.dec, z.err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxDecompressed), zstd.WithDecoderMaxWindow(maxDecompressed))
	})
	return z.err
}

func (z *zstdCompressor) Compress(src []byte) ([]byte, error) {
	if err := z.init(); err != nil {
		return nil, err
	}
	return z.enc.EncodeAll(src, nil), nil
}

func (z *zstdCompressor) Decompress(src []byte) ([]byte, error) {
	if err := z.init(); err != nil {
		return nil, err
	}
	return z.dec.DecodeAll(src, nil)
}
