package core

// Output is a record a processor call staged for a stream
// (Stager.StageOutput): written with the acknowledgement of the deliveries
// it was staged for, in the same step, or not at all.
type Output struct {
	// Stream is the stream the record goes to.
	Stream *Core
	// Entry is the record, encoded and keyed, its Partition set.
	Entry Entry
}

// OutputFields returns the field, value list Entry is written with to its
// partition of the stream (the codec field only when the entry's codec is
// not the stream's entry codec, or that is not known yet).
func (c *Core) OutputFields(e *Entry) []any {
	return e.appendFields(make([]any, 0, 6+2*len(e.Headers)), c.EntryCodec())
}

// Guarded reports whether sends to the stream never trim unprocessed
// entries (WhenFull refuse or wait).
func (c *Core) Guarded() bool { return c.def.WhenFull != FullTrim }

// Size is the stream's retention size per partition (XADD MAXLEN ~).
func (c *Core) Size() int64 { return c.def.Size }
