package sql

// Inspect walks the tree rooted at node depth-first in source order,
// calling f for every non-nil node; if f returns false, the node's children
// are skipped. Ident, ObjectName and TypeName values are not visited.
// Node must not be a typed nil pointer.
func Inspect(node Node, f func(Node) bool) {
	if node == nil || !f(node) {
		return
	}
	walk := func(n Node) { Inspect(n, f) }
	switch n := node.(type) {
	case *Query:
		for _, c := range n.With {
			walk(c)
		}
		walk(n.Body)
		for _, o := range n.OrderBy {
			walk(o)
		}
		walkExpr(n.Limit, f)
	case *CTE:
		walk(n.Query)
	case *Insert:
		walk(n.Query)
	case *CreateTable:
		for _, c := range n.Columns {
			walk(c)
		}
		if n.Watermark != nil {
			walk(n.Watermark)
		}
		if n.PrimaryKey != nil {
			walk(n.PrimaryKey)
		}
		for _, o := range n.Options {
			walk(o)
		}
	case *Watermark:
		walkExpr(n.Expr, f)
	case *CreateView:
		walk(n.Query)
	case *Explain:
		walk(n.Stmt)
	case *Select:
		for _, it := range n.Items {
			walk(it)
		}
		if n.From != nil {
			walk(n.From)
		}
		walkExpr(n.Where, f)
		walkExprs(n.GroupBy, f)
		walkExpr(n.Having, f)
	case *SelectItem:
		walkExpr(n.Expr, f)
	case *SetOp:
		walk(n.Left)
		walk(n.Right)
	case *Values:
		for _, r := range n.Rows {
			walk(r)
		}
	case *ValuesRow:
		walkExprs(n.Exprs, f)
	case *OrderItem:
		walkExpr(n.Expr, f)
	case *TableName:
		walkExpr(n.AsOf, f)
	case *DerivedTable:
		walk(n.Query)
	case *Join:
		walk(n.Left)
		walk(n.Right)
		walkExpr(n.On, f)
	case *TableFunc:
		walkExprs(n.Args, f)
	case *BinaryExpr:
		walk(n.Left)
		walk(n.Right)
	case *UnaryExpr:
		walk(n.X)
	case *IsExpr:
		walk(n.X)
	case *BetweenExpr:
		walk(n.X)
		walk(n.Low)
		walk(n.High)
	case *InExpr:
		walk(n.X)
		walkExprs(n.List, f)
		if n.Query != nil {
			walk(n.Query)
		}
	case *LikeExpr:
		walk(n.X)
		walk(n.Pattern)
		walkExpr(n.Escape, f)
	case *FuncCall:
		walkExprs(n.Args, f)
		walkExpr(n.Filter, f)
		if n.Over != nil {
			walk(n.Over)
		}
	case *WindowSpec:
		walkExprs(n.PartitionBy, f)
		for _, o := range n.OrderBy {
			walk(o)
		}
		if n.Frame != nil {
			walk(n.Frame)
		}
	case *WindowFrame:
		if n.Start != nil {
			walk(n.Start)
		}
		if n.End != nil {
			walk(n.End)
		}
	case *FrameBound:
		walkExpr(n.Offset, f)
	case *CastExpr:
		walk(n.X)
	case *CaseExpr:
		walkExpr(n.Operand, f)
		for _, w := range n.Whens {
			walk(w)
		}
		walkExpr(n.Else, f)
	case *WhenClause:
		walk(n.Cond)
		walk(n.Result)
	case *ExtractExpr:
		walk(n.X)
	case *TrimExpr:
		walkExpr(n.Chars, f)
		walk(n.X)
	case *SubqueryExpr:
		walk(n.Query)
	case *ExistsExpr:
		walk(n.Query)
	}
}

func walkExpr(e Expr, f func(Node) bool) {
	if e != nil {
		Inspect(e, f)
	}
}

func walkExprs(list []Expr, f func(Node) bool) {
	for _, e := range list {
		Inspect(e, f)
	}
}
