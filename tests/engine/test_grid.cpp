// SPDX-License-Identifier: GPL-3.0-or-later
// The rank grid over named axes (layout/grid.h, layout/parallel_axes.h): the
// numbering is Megatron's (dp innermost, pp outermost, r = stage * dp + d),
// every axis answers coordinates, groups and ring peers, and an axis of size 1
// changes no rank.
#include <QTest>
#include <algorithm>
#include <set>
#include <vector>

#include "core/error.h"
#include "layout/grid.h"

using namespace shardscope;

class TestGrid : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ranks_are_numbered_stage_major();
  void every_axis_answers_groups_and_peers();
  void groups_partition_the_world();
  void size_one_axes_change_nothing();
  void an_empty_axis_is_refused_by_its_flag();
};

void TestGrid::ranks_are_numbered_stage_major() {
  const Grid grid(3, 4);  // dp 3 x pp 4
  QCOMPARE(grid.world_size(), 12);
  QCOMPARE(grid.layout().dp(), 3);
  QCOMPARE(grid.layout().pp(), 4);
  for (int r = 0; r < 12; ++r) {
    QCOMPARE(grid.stage_of(r), r / 3);
    QCOMPARE(grid.dp_rank_of(r), r % 3);
    QCOMPARE(grid.coordinate(r, Axis::pp), r / 3);
    QCOMPARE(grid.coordinate(r, Axis::dp), r % 3);
    QCOMPARE(grid.rank_at(r / 3, r % 3), r);
  }
  QCOMPARE(grid.dp_group(2), (std::vector<int>{6, 7, 8}));
  QCOMPARE(grid.pipeline_group(1), (std::vector<int>{1, 4, 7, 10}));
}

void TestGrid::every_axis_answers_groups_and_peers() {
  const Grid grid(3, 4);
  QCOMPARE(grid.group(7, Axis::dp), (std::vector<int>{6, 7, 8}));
  QCOMPARE(grid.group(7, Axis::pp), (std::vector<int>{1, 4, 7, 10}));
  QCOMPARE(grid.next(8, Axis::dp), 6);  // around the ring of stage 2
  QCOMPARE(grid.previous(6, Axis::dp), 8);
  QCOMPARE(grid.next(7, Axis::pp), 10);
  QCOMPARE(grid.next(10, Axis::pp), 1);
  QCOMPARE(grid.previous(1, Axis::pp), 10);
  QCOMPARE(grid.with_coordinate(7, Axis::pp, 0), 1);
  QCOMPARE(grid.with_coordinate(7, Axis::dp, 2), 8);
}

void TestGrid::groups_partition_the_world() {
  const Grid grid(4, 3);
  for (const Axis axis : kAxes) {
    std::set<int> seen;
    for (int r = 0; r < grid.world_size(); ++r) {
      const std::vector<int> group = grid.group(r, axis);
      QCOMPARE(static_cast<int>(group.size()), grid.size(axis));
      QVERIFY(std::find(group.begin(), group.end(), r) != group.end());
      for (const int peer : group)  // the peers differ from r on `axis` only
        for (const Axis other : kAxes)
          if (other != axis) QCOMPARE(grid.coordinate(peer, other), grid.coordinate(r, other));
      if (group.front() == r) seen.insert(group.begin(), group.end());
    }
    QCOMPARE(static_cast<int>(seen.size()), grid.world_size());
  }
}

void TestGrid::size_one_axes_change_nothing() {
  Layout layout;
  QCOMPARE(layout.world_size(), 1);
  layout[Axis::dp] = 4;
  const Grid dp_only(layout);
  for (int r = 0; r < 4; ++r) {
    QCOMPARE(dp_only.coordinate(r, Axis::dp), r);
    QCOMPARE(dp_only.coordinate(r, Axis::pp), 0);
    QCOMPARE(dp_only.group(r, Axis::pp), std::vector<int>{r});
    QCOMPARE(dp_only.next(r, Axis::pp), r);
  }
  QCOMPARE(Grid(4, 1).dp_group(0), dp_only.dp_group(0));
}

void TestGrid::an_empty_axis_is_refused_by_its_flag() {
  Layout layout;
  layout[Axis::pp] = 0;
  try {
    Grid grid(layout);
    QFAIL("a grid with pp 0 was built");
  } catch (const ConfigError& e) {
    QCOMPARE(QString(e.what()), QString("--pp must be at least 1 (got 0)"));
  }
}

QTEST_GUILESS_MAIN(TestGrid)
#include "test_grid.moc"
