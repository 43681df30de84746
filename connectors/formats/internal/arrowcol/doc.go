// Package arrowcol holds what the formats' decoders and encoders share
// about Arrow columns: the kinds of column they handle, the column buffers
// a decoder writes values into in place, the batch of those columns that
// becomes a record, the view of a record's column an encoder reads, and the
// exact decimal parser.
//
// The types expose their fields: a decoder writes a value as
// col.V8[row] = v on a Column embedded in its own column type, with no
// call or indirection per value. Parsing, schema resolution and error
// messages stay in each format's package.
package arrowcol
