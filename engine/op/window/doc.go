// Package window is the streaming window aggregate (Agg): TUMBLE, HOP,
// CUMULATE and SESSION windows over event time, with per-row lateness and
// allowed lateness (DESIGN §3). It owns its state and writes it in the
// state format's window_agg and operator slots.
package window
