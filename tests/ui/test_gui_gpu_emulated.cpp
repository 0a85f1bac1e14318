// SPDX-License-Identifier: GPL-3.0-or-later
// The window on two pretend GPUs, offscreen: the CUDA plugin built over the
// CPU emulation and the NCCL plugin over its stand-in NCCL
// (tests/engine/cuda_emulation; CMake sets SHARDSCOPE_CUDA_PLUGIN,
// SHARDSCOPE_NCCL_PLUGIN and SHARDSCOPE_EMULATED_GPUS=2). The device list
// offers each GPU and one rank per GPU; a run of gpt-tiny on dp 2 with one
// rank per GPU trains from the window, its loss plot fills, and the memory
// view shows each rank's GPU figures (cudaMemGetInfo, the caching allocator,
// the ledger). A picture of the window goes to test_gui_gpu_emulated.png
// beside the test.
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QtTest>

#include "config_panel.h"
#include "main_window.h"
#include "run_controller.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/qcustomplot_include.h"

using namespace shardscope;
using namespace shardscope::ui;

class TestGuiGpuEmulated : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void oneRankPerPretendGpuTrainsFromTheWindow() {
    MainWindow window;
    window.resize(1500, 950);
    window.show();
    auto* devices = window.configPanel()->findChild<QComboBox*>(QStringLiteral("device"));
    QVERIFY(devices != nullptr);
    QTRY_VERIFY_WITH_TIMEOUT(devices->findData(QStringLiteral("cuda:each")) >= 0, 20000);  // the probe is off-thread
    QVERIFY(devices->findData(QStringLiteral("cuda:0")) >= 0);
    QVERIFY(devices->findData(QStringLiteral("cuda:1")) >= 0);
    const QString gpu0 = devices->itemText(devices->findData(QStringLiteral("cuda:0")));
    QVERIFY2(gpu0.contains(QStringLiteral("emulation")), qPrintable(gpu0));
    QVERIFY2(gpu0.endsWith(QStringLiteral(" (4.00 GiB), all ranks share it")), qPrintable(gpu0));

    RunConfig c = ConfigPanel::defaultConfig();
    c.model = "gpt-tiny";
    c.steps = 3;
    c.batch = 8;
    c.seq = 32;
    c.layout[Axis::dp] = 2;
    c.layout[Axis::pp] = 1;
    c.zero_stage = 1;
    c.device = "cuda";
    c.gpus = {0, 1};
    window.configPanel()->setConfig(c);
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QCOMPARE(devices->currentData().toString(), QStringLiteral("cuda:each"));
    QCOMPARE(window.configPanel()->config().gpus, (std::vector<int>{0, 1}));

    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 300000);
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    QCOMPARE(window.lossPlot()->plot()->graph(0)->data()->size(), 3);

    const QString text = window.memoryBars()->deviceText();
    QVERIFY2(text.contains(QStringLiteral("GPU 0 (rank 0): ")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("GPU 1 (rank 1): ")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral(" MiB of 4.00 GiB in use (cudaMemGetInfo)")), qPrintable(text));

    const QString picture = QDir(QCoreApplication::applicationDirPath()).filePath("test_gui_gpu_emulated.png");
    QVERIFY(window.grab().save(picture));
    qInfo("%s", qPrintable(picture));
  }
};

QTEST_MAIN(TestGuiGpuEmulated)
#include "test_gui_gpu_emulated.moc"
