// Package op holds the streaming operators built from the kernels: filter,
// project and the window aggregate. Each implements engine.Operator; the
// extra abilities (watermarks, stats) are small optional interfaces.
package op
