// Package window defines the streaming windows (TUMBLE, HOP, SESSION,
// CUMULATE: Kind and Spec) and their alignment to epoch 0 plus an offset.
// The window aggregate that assigns rows to them is engine/op/window.
package window
