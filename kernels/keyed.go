package kernels

// KeyColumns are the input columns of the GROUP BY key.
func (g *GroupAgg) KeyColumns() []int { return append([]int(nil), g.cfg.Keys...) }

// KeyColumns are the input columns of the PARTITION BY key.
func (t *TopN) KeyColumns() []int { return append([]int(nil), t.cfg.Partition...) }
