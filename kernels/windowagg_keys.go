package kernels

// KeyColumns are the input columns of the group key (besides the window).
func (w *WindowAgg) KeyColumns() []int { return append([]int(nil), w.cfg.Keys...) }
