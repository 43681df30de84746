-- Nexmark q3, local item suggestion: people in Oregon, Idaho or
-- California who sell in category 10 (a regular join, state kept for
-- every row of both filtered sides).
-- Adapted: the filters stand in subqueries below the join. Flink's
-- planner pushes them down itself; Clink's does not push predicates
-- through a join yet, and its join would keep every auction and person.
-- The result is the same.
SET 'table.exec.state.ttl' = '0';

CREATE TABLE nexmark_q3 (name VARCHAR, city VARCHAR, state VARCHAR, id BIGINT)
WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q3
SELECT P.name, P.city, P.state, A.id
FROM (SELECT * FROM auction WHERE category = 10) AS A
INNER JOIN (SELECT * FROM person WHERE state = 'OR' OR state = 'ID' OR state = 'CA') AS P
ON A.seller = P.id;
