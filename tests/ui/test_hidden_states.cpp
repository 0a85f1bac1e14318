// SPDX-License-Identifier: GPL-3.0-or-later
// The Hidden states tab (seed chapter 9): the two measures it draws against
// vectors worked by hand, a folder it cannot use named in its status (the UI
// stays up), and all-MiniLM-L6-v2 run over an English and Chinese text: one
// state per layer, the map's cells equal to the engine's cosines, the formula
// line's mean equal to the engine's, and a screenshot of the tab.
#include <QDir>
#include <QSignalSpy>
#include <QTabWidget>
#include <QtTest>
#include <cmath>

#include "main_window.h"
#include "views/hidden_states_view.h"
#include "views/qcustomplot_include.h"

using namespace shardscope;
using shardscope::ui::HiddenStatesView;
using shardscope::ui::MainWindow;

class TestHiddenStates : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // (1, 0), (0, 1), (1, 1): norms 1, 1, √2; cosines 0 and 1/√2; the mean over
  // the six ordered pairs of different tokens (0 + 2 × 0.7071) × 2 / 6.
  void measuresMatchVectorsWorkedByHand() {
    HiddenStates s;
    s.tokens = 3;
    s.channels = 2;
    s.states = {{1, 0, 0, 1, 1, 1}};
    const auto norms = token_norms(s, 0);
    QCOMPARE(norms.size(), std::size_t{3});
    QVERIFY(std::abs(norms[2] - std::sqrt(2.0)) < 1e-12);
    const auto c = token_cosines(s, 0);
    QVERIFY(std::abs(c[0 * 3 + 1]) < 1e-12);
    QVERIFY(std::abs(c[0 * 3 + 2] - 1 / std::sqrt(2.0)) < 1e-12);
    QCOMPARE(c[1 * 3 + 1], 1.0);
    QVERIFY(std::abs(mean_pairwise_cosine(s, 0) - 2 * std::sqrt(0.5) / 3) < 1e-12);
  }

  // A folder without a tokenizer: the status names what is missing, nothing crashes.
  void unusableFolderIsNamed() {
    HiddenStatesView view;
    view.setModelDir(QStringLiteral(SHARDSCOPE_FIXTURES "/hf/bert_tiny"));
    QSignalSpy failed(&view, &HiddenStatesView::failed);
    view.compute();
    QVERIFY(failed.wait(30000));
    QVERIFY2(view.statusText().startsWith(QStringLiteral("Cannot compute")), qPrintable(view.statusText()));
    QVERIFY2(view.statusText().contains(QStringLiteral("bert_tiny")), qPrintable(view.statusText()));
    QVERIFY(!view.result().has_value());
  }

  void miniLmLayersAndMap() {
    const QString dir = QString::fromStdString(pretrained_minilm_dir());
    if (!QDir(dir).exists(QStringLiteral("model.safetensors")))
      QSKIP(qPrintable(QStringLiteral("all-MiniLM-L6-v2 is not fetched (%1); run bash scripts/fetch_minilm.sh")
                           .arg(dir)));
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    HiddenStatesView* view = window.hiddenStatesView();
    QVERIFY(view != nullptr);
    QCOMPARE(view->modelDir(), dir);  // the fetched model is the default
    auto* tabs = window.findChild<QTabWidget*>(QStringLiteral("views"));
    tabs->setCurrentWidget(view);
    view->setText(QStringLiteral("The cat sat on the mat. 猫坐在垫子上。"));
    QSignalSpy computed(view, &HiddenStatesView::computed);
    view->compute();
    QVERIFY(computed.wait(60000));
    const TextHiddenStates& r = *view->result();
    QCOMPARE(r.config.layers, 6);
    QCOMPARE(static_cast<int>(r.states.states.size()), 7);  // embeddings + 6 layers
    QCOMPARE(r.tokens.front(), std::string("[CLS]"));
    QCOMPARE(r.tokens.back(), std::string("[SEP]"));
    QCOMPARE(view->layer(), 6);  // the last layer first: the sentence vectors
    for (int layer : {0, 3, 6}) {
      view->setLayer(layer);
      auto* map = qobject_cast<QCPColorMap*>(view->findChild<QCustomPlot*>(QStringLiteral("hiddenStatesMap"))->plottable(0));
      QVERIFY(map != nullptr);
      const int T = r.states.tokens;
      QCOMPARE(map->data()->keySize(), T);
      const auto c = token_cosines(r.states, layer);
      QCOMPARE(map->data()->cell(1, 0), c[0 * T + 1]);
      QCOMPARE(map->data()->cell(T - 1, 2), c[2 * T + T - 1]);
      const QString mean = QString::number(mean_pairwise_cosine(r.states, layer), 'f', 3);
      QVERIFY2(view->formulaText().contains(mean), qPrintable(view->formulaText() + " / " + mean));
    }
    QTest::qWait(300);  // the plots replot on the event loop
    QVERIFY(window.grab().save(QDir::temp().filePath(QStringLiteral("hidden_states_tab.png"))));
  }
};

QTEST_MAIN(TestHiddenStates)
#include "test_hidden_states.moc"
