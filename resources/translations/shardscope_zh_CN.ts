<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>shardscope::ui::ConfigPanel</name>
    <message>
        <source>DDP (ring all-reduce)</source>
        <translation>DDP（环形 all-reduce）</translation>
    </message>
    <message>
        <source>DataParallel (naive, rank 0 master)</source>
        <translation>DataParallel（朴素实现，rank 0 为主）</translation>
    </message>
    <message>
        <source>Recompute each layer in backward</source>
        <translation>反向时逐层重计算</translation>
    </message>
    <message>
        <source>LayerNorms on seq / tp tokens</source>
        <translation>LayerNorm 只算 seq / tp 个 token</translation>
    </message>
    <message numerus="yes">
        <source>%n rank(s): dp %1 × tp %2 × pp %3; each rank runs micro-batches of %4 sequence(s).</source>
        <translation>
            <numerusform>共 %n 个 rank：dp %1 × tp %2 × pp %3；每个 rank 的微批次含 %4 条序列。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n rank(s): dp %1 × tp %2 × pp %3.</source>
        <translation>
            <numerusform>共 %n 个 rank：dp %1 × tp %2 × pp %3。</numerusform>
        </translation>
    </message>
    <message>
        <source>Cannot run: %1</source>
        <translation>无法运行：%1</translation>
    </message>
    <message>
        <source>Training text</source>
        <translation>训练文本</translation>
    </message>
    <message>
        <source>Empty: the shipped corpus (English + Chinese)</source>
        <translation>留空：使用内置语料（英文 + 中文）</translation>
    </message>
    <message>
        <source>Browse...</source>
        <translation>浏览……</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>the data file %1 does not exist</source>
        <translation>数据文件 %1 不存在</translation>
    </message>
    <message>
        <source>the data file %1 cannot be read</source>
        <translation>无法读取数据文件 %1</translation>
    </message>
    <message>
        <source>Text files (*.txt);;All files (*)</source>
        <translation>文本文件 (*.txt);;所有文件 (*)</translation>
    </message>
    <message>
        <source>never</source>
        <translation>从不</translation>
    </message>
    <message>
        <source>CPU: simulated ranks</source>
        <translation>CPU：模拟的 rank</translation>
    </message>
    <message>
        <source>GPU %1: %2 (%3), all ranks share it</source>
        <translation>GPU %1：%2（%3），所有 rank 共用</translation>
    </message>
    <message numerus="yes">
        <source>One rank per GPU (%n GPU(s), NCCL)</source>
        <translation>
            <numerusform>每个 rank 一块 GPU（%n 块 GPU，NCCL）</numerusform>
        </translation>
    </message>
    <message>
        <source>No GPU: %1</source>
        <translation>没有 GPU：%1</translation>
    </message>
    <message>
        <source>Looking for GPUs...</source>
        <translation>正在查找 GPU……</translation>
    </message>
    <message>
        <source>one rank per GPU needs %1 GPUs (dp × pp); this machine has %2</source>
        <translation>每个 rank 一块 GPU 需要 %1 块 GPU（dp × pp）；本机只有 %2 块</translation>
    </message>
    <message>
        <source>Checks the estimator&apos;s prediction against this GPU&apos;s memory; with none, a GPU run is checked against the GPU chosen above. It is advice: it never blocks Run.</source>
        <translation>用估算器的预测对照这款 GPU 的显存；选“无”时，GPU 运行会对照上面选中的 GPU。仅供参考，不会阻止运行。</translation>
    </message>
    <message>
        <source>GPU %1 and the others</source>
        <translation>GPU %1 及其余各块</translation>
    </message>
    <message>
        <source>GPU %1: %2</source>
        <translation>GPU %1：%2</translation>
    </message>
    <message>
        <source>Fits: %1 predicted for all %2 ranks ≤ %3 (%4)</source>
        <translation>放得下：全部 %2 个 rank 预测共需 %1 ≤ %3（%4）</translation>
    </message>
    <message>
        <source>Does not fit: %1 predicted for all %2 ranks &gt; %3 (%4)</source>
        <translation>放不下：全部 %2 个 rank 预测共需 %1 &gt; %3（%4）</translation>
    </message>
    <message>
        <source>Fits: %1 predicted per rank ≤ %2 (%3)</source>
        <translation>放得下：每个 rank 预测需要 %1 ≤ %2（%3）</translation>
    </message>
    <message>
        <source>Does not fit: %1 predicted per rank &gt; %2 (%3)</source>
        <translation>放不下：每个 rank 预测需要 %1 &gt; %2（%3）</translation>
    </message>
    <message>
        <source>Ranks run as</source>
        <translation>rank 运行方式</translation>
    </message>
    <message>
        <source>threads</source>
        <translation>线程</translation>
    </message>
    <message>
        <source>processes</source>
        <translation>进程</translation>
    </message>
    <message>
        <source>threads: every rank in this program; processes: one process per rank, started with shardscope-cli launch (mpirun), their events streamed back here</source>
        <translation>线程：所有 rank 都在本程序中运行；进程：每个 rank 一个进程，由 shardscope-cli launch（mpirun）启动，其事件流式传回这里</translation>
    </message>
    <message>
        <source>The model&apos;s %1 layers do not split evenly over %2 stages (%3 layers): the stages with fewer layers wait for the slowest one, and the bubble line counts that wait as stage imbalance.</source>
        <translation>模型的 %1 层不能平均分到 %2 个阶段（各阶段 %3 层）：层数少的阶段要等最慢的阶段，气泡那一行把这段等待算作阶段不均衡。</translation>
    </message>
    <message>
        <source>Model and data</source>
        <translation>模型与数据</translation>
    </message>
    <message>
        <source>Parallel layout</source>
        <translation>并行布局</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精度</translation>
    </message>
    <message>
        <source>Clock and device</source>
        <translation>时钟与设备</translation>
    </message>
    <message>
        <source>Restarts after a failure</source>
        <translation>失败后重启次数</translation>
    </message>
    <message>
        <source>When a rank fails (or its process dies or freezes), start the run again from the latest checkpoint (File → Save checkpoints to...), at most this many times, as torchrun&apos;s --max-restarts does</source>
        <translation>当某个 rank 失败（或其进程死掉、冻住）时，从最新的检查点（文件 → 检查点保存到……）重新开始运行，最多这么多次，和 torchrun 的 --max-restarts 一样</translation>
    </message>
    <message>
        <source>None (File → Open schedule...)</source>
        <translation>无（文件 → 打开调度...）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ContextParallelView</name>
    <message>
        <source>Layer:</source>
        <translation>层：</translation>
    </message>
    <message>
        <source>The transformer layer whose ring attention is shown</source>
        <translation>显示其环形注意力的 Transformer 层</translation>
    </message>
    <message>
        <source>Forward: key/value blocks</source>
        <translation>前向：键/值块</translation>
    </message>
    <message>
        <source>Backward: blocks and their gradients</source>
        <translation>反向：键/值块及其梯度</translation>
    </message>
    <message>
        <source>Run a model with Context-parallel ranks of 2 or more to see ring attention&apos;s blocks travel.</source>
        <translation>将上下文并行 rank 数设为 2 或以上并运行模型，即可看到环形注意力的块如何在环上传递。</translation>
    </message>
    <message>
        <source>This run has one context-parallel rank, so every rank attends over its whole sequences. With Context-parallel ranks of 2 or more (train --cp 2), each rank keeps seq/cp tokens of every sequence and this view draws the key/value blocks travelling the ring, each rank&apos;s attention tiles filling in as the blocks arrive, and the causal mask&apos;s work per rank under the zig-zag or contiguous split.</source>
        <translation>本次运行只有一个上下文并行 rank，每个 rank 都对完整序列做注意力。将上下文并行 rank 数设为 2 或以上（train --cp 2）时，每个 rank 保存每条序列的 seq/cp 个 token，此视图画出在环上传递的键/值块、各 rank 的注意力块随键/值块到达逐步填满，以及之字形（zig-zag）或连续切分下因果掩码带来的每个 rank 的计算量。</translation>
    </message>
    <message>
        <source>rank %1: %2</source>
        <translation>rank %1：%2</translation>
    </message>
    <message>
        <source>no causal mask: every tile is whole</source>
        <translation>无因果掩码：每个块都完整</translation>
    </message>
    <message>
        <source>contiguous: rank r&apos;s chunks 2r and 2r+1 give it 4r+2</source>
        <translation>连续：rank r 的块 2r 与 2r+1 使它为 4r+2</translation>
    </message>
    <message>
        <source>Work per rank (tiles kept by the mask, a diagonal tile counts ½): %1 (%2)</source>
        <translation>每个 rank 的计算量（掩码保留的块，对角块计 ½）：%1（%2）</translation>
    </message>
    <message>
        <source>Ring: no blocks of layer %1 in this pass yet.</source>
        <translation>环：本遍中第 %1 层还没有块。</translation>
    </message>
    <message>
        <source>step %1: %2 B</source>
        <translation>环步 %1：%2 B</translation>
    </message>
    <message>
        <source>Bytes on the ring per ring step (step %1, micro-batch %2): %3</source>
        <translation>环上每个环步的字节（第 %1 步，微批次 %2）：%3</translation>
    </message>
    <message>
        <source>Sent per rank in this pass: %1 B; formula %2 = %3 B with %4</source>
        <translation>本遍每个 rank 发送：%1 B；公式 %2 = %3 B，其中 %4</translation>
    </message>
    <message>
        <source>dK/dV %1</source>
        <translation>dK/dV %1</translation>
    </message>
    <message>
        <source>K/V %1</source>
        <translation>K/V %1</translation>
    </message>
    <message>
        <source>r%1</source>
        <translation>r%1</translation>
    </message>
    <message>
        <source>Ring step %1 of %2</source>
        <translation>环步 %1 / %2</translation>
    </message>
    <message>
        <source>Attention tiles: query chunks ↓, key chunks →</source>
        <translation>注意力块：查询块 ↓，键块 →</translation>
    </message>
    <message>
        <source>r%1 q%2</source>
        <translation>r%1 q%2</translation>
    </message>
    <message>
        <source>zig-zag split</source>
        <translation>之字形切分</translation>
    </message>
    <message>
        <source>contiguous split</source>
        <translation>连续切分</translation>
    </message>
    <message>
        <source>Layer %1: ring attention over cp = %2 ranks, %3. No blocks of this pass yet.</source>
        <translation>第 %1 层：cp = %2 个 rank 上的环形注意力，%3。本遍还没有块。</translation>
    </message>
    <message>
        <source>Layer %1: ring attention over cp = %2 ranks, %3; step %4, micro-batch %5, %6 sends of this pass seen.</source>
        <translation>第 %1 层：cp = %2 个 rank 上的环形注意力，%3；第 %4 步，微批次 %5，本遍已见 %6 次发送。</translation>
    </message>
    <message>
        <source>zig-zag: chunks r and 2cp−1−r give every rank 2cp = %1</source>
        <translation>之字形：块 r 与 2cp−1−r 使每个 rank 都是 2cp = %1</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ExpertsView</name>
    <message>
        <source>Layer:</source>
        <translation>层：</translation>
    </message>
    <message>
        <source>The MoE layer whose routing and all-to-all are shown</source>
        <translation>显示其路由与 all-to-all 的 MoE 层</translation>
    </message>
    <message>
        <source>Run a mixture-of-experts model (gpt-tiny-moe) to see tokens routed to experts.</source>
        <translation>运行混合专家模型（gpt-tiny-moe），即可看到 token 被路由到各专家。</translation>
    </message>
    <message>
        <source>This model is dense: every token runs the same MLP. Choose a mixture-of-experts model (--model gpt-tiny-moe, with Expert-parallel ranks of 2 or more for the all-to-all) to see the tokens each expert takes per step against its capacity, the dropped choices, the load-balancing loss and the bytes the all-to-all moves between ranks.</source>
        <translation>此模型是稠密模型：每个 token 都经过同一个 MLP。选择混合专家模型（--model gpt-tiny-moe；专家并行 rank 数为 2 或以上时有 all-to-all），即可看到每步各专家接收的 token 与其容量的对比、被丢弃的选择、负载均衡损失，以及 all-to-all 在 rank 之间传输的字节。</translation>
    </message>
    <message>
        <source>Layer %1 has a dense MLP; choose a MoE layer.</source>
        <translation>第 %1 层是稠密 MLP；请选择 MoE 层。</translation>
    </message>
    <message>
        <source>capacity ceil(%1 · %2 tokens · k %3 / E %4) = %5 per forward</source>
        <translation>容量 ceil(%1 · %2 个 token · k %3 / E %4) = 每次前向 %5</translation>
    </message>
    <message>
        <source>Routing: no step of layer %1 yet; %2.</source>
        <translation>路由：第 %1 层还没有完成的步；%2。</translation>
    </message>
    <message>
        <source>Step %1, layer %2: %3 choices routed, %4 dropped (%5%); %6, %7 places per expert over the step.</source>
        <translation>第 %1 步，第 %2 层：路由了 %3 个选择，丢弃 %4 个（%5%）；%6，整步每个专家共 %7 个位置。</translation>
    </message>
    <message>
        <source>All-to-all: every expert on every rank (Expert-parallel ranks 1): no tokens travel. Run with --ep 2 to send each choice to its expert&apos;s rank.</source>
        <translation>All-to-all：每个 rank 上都有全部专家（专家并行 rank 数为 1）：没有 token 传输。使用 --ep 2 运行，每个选择会被发送到其专家所在的 rank。</translation>
    </message>
    <message>
        <source>All-to-all of layer %1 in step %2 (dispatch and combine, forward and backward): %3 B between ranks.</source>
        <translation>第 %2 步第 %1 层的 all-to-all（分发与合并，前向与反向）：rank 之间共 %3 B。</translation>
    </message>
    <message>
        <source>Choices per expert this step (bars) against capacity (dashed)</source>
        <translation>本步每个专家的选择数（柱）与容量（虚线）</translation>
    </message>
    <message>
        <source>expert %1</source>
        <translation>专家 %1</translation>
    </message>
    <message>
        <source>capacity %1</source>
        <translation>容量 %1</translation>
    </message>
    <message>
        <source>Load-balancing loss E·Σ f·P: no step yet</source>
        <translation>负载均衡损失 E·Σ f·P：还没有步</translation>
    </message>
    <message>
        <source>Load-balancing loss E·Σ f·P: %1 at step %2</source>
        <translation>负载均衡损失 E·Σ f·P：第 %2 步为 %1</translation>
    </message>
    <message>
        <source>All-to-all bytes: row sends to column</source>
        <translation>All-to-all 字节：行发送给列</translation>
    </message>
    <message>
        <source>r%1</source>
        <translation>r%1</translation>
    </message>
    <message>
        <source>local</source>
        <translation>本地</translation>
    </message>
    <message>
        <source>%1 experts, top-%2 routing, over %3 rank(s) with the experts split over ep = %4.</source>
        <translation>%1 个专家，top-%2 路由，%3 个 rank，专家切分到 ep = %4 上。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::HiddenStatesView</name>
    <message>
        <source>Hugging Face model folder (config.json, model.safetensors, tokenizer.json)</source>
        <translation>Hugging Face 模型文件夹（config.json、model.safetensors、tokenizer.json）</translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览……</translation>
    </message>
    <message>
        <source>Compute</source>
        <translation>计算</translation>
    </message>
    <message>
        <source>mean token norm |h| (left)</source>
        <translation>token 向量平均范数 |h|（左轴）</translation>
    </message>
    <message>
        <source>mean cosine between tokens (right)</source>
        <translation>token 之间的平均余弦（右轴）</translation>
    </message>
    <message>
        <source>norm</source>
        <translation>范数</translation>
    </message>
    <message>
        <source>cosine</source>
        <translation>余弦</translation>
    </message>
    <message>
        <source>Layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>Running the model over the text…</source>
        <translation>正在用模型处理文本……</translation>
    </message>
    <message>
        <source>Cannot compute: %1</source>
        <translation>无法计算：%1</translation>
    </message>
    <message>
        <source>%1 (%2): %3 layers, %4 channels; %5 tokens</source>
        <translation>%1（%2）：%3 层，%4 个通道；%5 个 token</translation>
    </message>
    <message>
        <source>Press Compute to run a pretrained model over the text. all-MiniLM-L6-v2 is fetched by bash scripts/fetch_minilm.sh; any GPT-2 or BERT folder with config.json, model.safetensors and tokenizer.json works.</source>
        <translation>按“计算”用预训练模型处理文本。all-MiniLM-L6-v2 由 bash scripts/fetch_minilm.sh 下载；任何带有 config.json、model.safetensors 和 tokenizer.json 的 GPT-2 或 BERT 文件夹都可以。</translation>
    </message>
    <message>
        <source>cos(a, b) = a·b / (|a| |b|) between every two tokens of hidden state %1; mean over different tokens = %2</source>
        <translation>隐藏状态 %1 中每两个 token 之间的 cos(a, b) = a·b / (|a| |b|)；不同 token 之间的平均值 = %2</translation>
    </message>
    <message>
        <source>cos(a, b) = a·b / (|a| |b|): 1 for the same direction, 0 for unrelated vectors</source>
        <translation>cos(a, b) = a·b / (|a| |b|)：方向相同为 1，互不相关的向量为 0</translation>
    </message>
    <message>
        <source>token</source>
        <translation>token</translation>
    </message>
    <message>
        <source>hidden state (0: embeddings)</source>
        <translation>隐藏状态（0：嵌入层）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LessonsPanel</name>
    <message>
        <source>Try it: load this run</source>
        <translation>试一试：加载这个运行</translation>
    </message>
    <message>
        <source>Loads the lesson&apos;s settings into the panel; press Run to train.</source>
        <translation>把本课的设置载入面板；按 Run 开始训练。</translation>
    </message>
    <message>
        <source>Pin, then try %1</source>
        <translation>固定本次运行，再试 %1</translation>
    </message>
    <message>
        <source>After the lesson&apos;s run: pins it (loss curve and memory bars stay) and loads the run it is compared with; press Run to draw both.</source>
        <translation>在课程的运行之后：固定它（损失曲线和显存柱保留），并载入用来对比的运行；按“运行”即可同时画出两次。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LossPlot</name>
    <message>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Cross-entropy loss</source>
        <translation>交叉熵损失</translation>
    </message>
    <message>
        <source>Training loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <source>Eval loss</source>
        <translation>验证损失</translation>
    </message>
    <message>
        <source>Training loss (%1)</source>
        <translation>训练损失（%1）</translation>
    </message>
    <message>
        <source>Previous run (%1)</source>
        <translation>上一次运行（%1）</translation>
    </message>
    <message>
        <source>Pinned run (%1)</source>
        <translation>固定的运行（%1）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LossScalePlot</name>
    <message>
        <source>Loss scale (fp16)</source>
        <translation>损失缩放系数（fp16）</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Loss scale (log)</source>
        <translation>损失缩放系数（对数）</translation>
    </message>
    <message>
        <source>Loss scale</source>
        <translation>损失缩放系数</translation>
    </message>
    <message>
        <source>Overflow: step skipped</source>
        <translation>溢出：跳过该步</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MainWindow</name>
    <message>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>Pipeline</source>
        <translation>流水线</translation>
    </message>
    <message>
        <source>Ring all-reduce</source>
        <translation>环形 all-reduce</translation>
    </message>
    <message>
        <source>Ready: press Run to train on simulated ranks (threads on the CPU).</source>
        <translation>就绪：点击“运行”，在模拟的 rank（CPU 上的线程）上开始训练。</translation>
    </message>
    <message>
        <source>ShardScope</source>
        <translation>ShardScope</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>Step once</source>
        <translation>单步</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Engine log and errors appear here.</source>
        <translation>引擎日志和错误信息显示在这里。</translation>
    </message>
    <message numerus="yes">
        <source>Starting %1 on %n rank(s)...</source>
        <translation>
            <numerusform>正在 %n 个 rank 上启动 %1……</numerusform>
        </translation>
    </message>
    <message>
        <source>Error: %1</source>
        <translation>错误：%1</translation>
    </message>
    <message>
        <source>Step %1 of %2: loss %3, %4 tokens/s</source>
        <translation>第 %1/%2 步：损失 %3，吞吐量 %4 token/s</translation>
    </message>
    <message>
        <source>Run failed: %1</source>
        <translation>运行失败：%1</translation>
    </message>
    <message numerus="yes">
        <source>Stopped after %n step(s).</source>
        <translation>
            <numerusform>已在 %n 步后停止。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Finished: %n step(s).</source>
        <translation>
            <numerusform>已完成：共 %n 步。</numerusform>
        </translation>
    </message>
    <message>
        <source>Train with these settings</source>
        <translation>按这些设置开始训练</translation>
    </message>
    <message>
        <source>Cannot run: %1</source>
        <translation>无法运行：%1</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>ZeRO</source>
        <translation>ZeRO</translation>
    </message>
    <message>
        <source>Open recording</source>
        <translation>打开录制文件</translation>
    </message>
    <message>
        <source>ShardScope recordings (*.ssrun);;All files (*)</source>
        <translation>ShardScope 录制文件 (*.ssrun);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Record next run</source>
        <translation>录制下一次运行</translation>
    </message>
    <message>
        <source>ShardScope recordings (*.ssrun)</source>
        <translation>ShardScope 录制文件 (*.ssrun)</translation>
    </message>
    <message>
        <source>The next run will be recorded to %1.</source>
        <translation>下一次运行将录制到 %1。</translation>
    </message>
    <message>
        <source>Export Chrome trace</source>
        <translation>导出 Chrome trace</translation>
    </message>
    <message>
        <source>Chrome traces (*.json)</source>
        <translation>Chrome trace 文件 (*.json)</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Open recording...</source>
        <translation>打开录制文件(&amp;O)……</translation>
    </message>
    <message>
        <source>&amp;Record next run...</source>
        <translation>录制下一次运行(&amp;R)……</translation>
    </message>
    <message>
        <source>&amp;Export Chrome trace...</source>
        <translation>导出 Chrome trace(&amp;E)……</translation>
    </message>
    <message>
        <source>Replay time</source>
        <translation>回放时间</translation>
    </message>
    <message>
        <source>Drag to replay the recording up to this time</source>
        <translation>拖动以回放录制内容直到此时刻</translation>
    </message>
    <message>
        <source>%1 s of %2 s</source>
        <translation>%1 秒 / 共 %2 秒</translation>
    </message>
    <message>
        <source>Opened recording %1: %2 events.</source>
        <translation>已打开录制文件 %1：共 %2 个事件。</translation>
    </message>
    <message>
        <source>Live plots</source>
        <translation>实时曲线</translation>
    </message>
    <message>
        <source>Playback speed</source>
        <translation>播放速度</translation>
    </message>
    <message>
        <source>1× (real time)</source>
        <translation>1×（实时）</translation>
    </message>
    <message>
        <source>½×</source>
        <translation>½×</translation>
    </message>
    <message>
        <source>¼×</source>
        <translation>¼×</translation>
    </message>
    <message>
        <source>1/10×</source>
        <translation>1/10×</translation>
    </message>
    <message>
        <source>Slow motion for teaching: the views replay each step&apos;s events at this fraction of real time, and the engine waits between steps until they have. The training math is unchanged.</source>
        <translation>教学用慢动作：各视图以实时的这一比例回放每一步的事件，引擎在两步之间等待回放完成。训练的计算本身不变。</translation>
    </message>
    <message>
        <source>Window closed during the run: training stopped, nothing saved.</source>
        <translation>运行期间关闭了窗口：训练已停止，未保存任何内容。</translation>
    </message>
    <message>
        <source>Slow motion: the views replay each step at %1 speed; training waits between steps.</source>
        <translation>慢动作：各视图以 %1 速度回放每一步；训练在两步之间等待。</translation>
    </message>
    <message>
        <source>rank %1 step %2: inf/NaN in %3 at loss scale %4; the step is skipped</source>
        <translation>rank %1 第 %2 步：在缩放系数 %4 下 %3 出现 inf/NaN；跳过该步</translation>
    </message>
    <message>
        <source>&amp;Lessons</source>
        <translation>课程(&amp;L)</translation>
    </message>
    <message>
        <source>Lessons</source>
        <translation>课程</translation>
    </message>
    <message>
        <source>Show lessons</source>
        <translation>显示课程</translation>
    </message>
    <message>
        <source>trace</source>
        <translation>跟踪</translation>
    </message>
    <message>
        <source>debug</source>
        <translation>调试</translation>
    </message>
    <message>
        <source>info</source>
        <translation>信息</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>Import config</source>
        <translation>导入配置</translation>
    </message>
    <message>
        <source>Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation>配置文件：config.json、DeepSpeed JSON、accelerate YAML (*.json *.yaml *.yml);;所有文件 (*)</translation>
    </message>
    <message>
        <source>&amp;Plan memory...</source>
        <translation>显存规划(&amp;P)……</translation>
    </message>
    <message>
        <source>Per-GPU memory of any model at ZeRO stages 0-3, with formulas and a verdict</source>
        <translation>任意模型在 ZeRO 0–3 各阶段的每卡显存，附公式和结论</translation>
    </message>
    <message>
        <source>&amp;Import config (config.json, DeepSpeed, accelerate)...</source>
        <translation>导入配置(&amp;I)（config.json、DeepSpeed、accelerate）……</translation>
    </message>
    <message>
        <source>%1, batch %2</source>
        <translation>%1，批次 %2</translation>
    </message>
    <message>
        <source>, %1 accumulation steps of %2</source>
        <translation>，%1 个累积步、每步 %2</translation>
    </message>
    <message>
        <source>, checkpointing</source>
        <translation>，激活检查点</translation>
    </message>
    <message>
        <source>Hidden states</source>
        <translation>隐藏状态</translation>
    </message>
    <message>
        <source>Save &amp;checkpoints to...</source>
        <translation>检查点保存到(&amp;C)……</translation>
    </message>
    <message>
        <source>Res&amp;ume from checkpoint...</source>
        <translation>从检查点恢复(&amp;U)……</translation>
    </message>
    <message>
        <source>Save checkpoints to</source>
        <translation>检查点保存到</translation>
    </message>
    <message>
        <source>Every run will save its training state and its Hugging Face weights to %1 when it ends or is stopped (a step-NNNNNN folder each time).</source>
        <translation>之后每次运行结束或停止时，都会把训练状态和 Hugging Face 权重保存到 %1（每次一个 step-NNNNNN 文件夹）。</translation>
    </message>
    <message>
        <source>Resume from checkpoint (a step-NNNNNN folder, or the folder that holds them)</source>
        <translation>从检查点恢复（一个 step-NNNNNN 文件夹，或包含它们的文件夹）</translation>
    </message>
    <message>
        <source>The next run resumes from step %1 of %2 (set Steps above %1; the model and seed must be the saved ones, the layout may change).</source>
        <translation>下一次运行将从 %2 的第 %1 步继续（把步数设为大于 %1；模型和随机种子须与保存时相同，并行布局可以改变）。</translation>
    </message>
    <message>
        <source>Not a checkpoint: %1</source>
        <translation>不是检查点：%1</translation>
    </message>
    <message>
        <source>Attach to a job</source>
        <translation>附加到作业</translation>
    </message>
    <message>
        <source>Listen on port (this machine only); start the job with
train ... --events-to 127.0.0.1:PORT</source>
        <translation>监听端口（仅限本机）；用以下命令启动作业：
train ... --events-to 127.0.0.1:PORT</translation>
    </message>
    <message>
        <source>&amp;Attach to a job...</source>
        <translation>附加到作业(&amp;A)...</translation>
    </message>
    <message>
        <source>Show the events of a job started from a shell with --events-to</source>
        <translation>显示从命令行以 --events-to 启动的作业的事件</translation>
    </message>
    <message>
        <source>Cannot attach: %1</source>
        <translation>无法附加：%1</translation>
    </message>
    <message>
        <source>Waiting for a job on 127.0.0.1:%1 (train ... --events-to 127.0.0.1:%1)</source>
        <translation>正在 127.0.0.1:%1 上等待作业（train ... --events-to 127.0.0.1:%1）</translation>
    </message>
    <message numerus="yes">
        <source>Attached: %1 on %n rank(s)</source>
        <translation>
            <numerusform>已附加：%1，%n 个 rank</numerusform>
        </translation>
    </message>
    <message>
        <source>Open config for a run</source>
        <translation>打开训练配置</translation>
    </message>
    <message>
        <source>DeepSpeed JSON or accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation>DeepSpeed JSON 或 accelerate YAML (*.json *.yaml *.yml);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open &amp;config for a run (DeepSpeed, accelerate)...</source>
        <translation>打开训练配置(&amp;C)（DeepSpeed、accelerate）...</translation>
    </message>
    <message>
        <source>Sets the panel from a DeepSpeed JSON or an accelerate YAML, as train --deepspeed / --accelerate does</source>
        <translation>按 DeepSpeed JSON 或 accelerate YAML 设置面板，与 train --deepspeed / --accelerate 相同</translation>
    </message>
    <message>
        <source>Config not opened: %1</source>
        <translation>配置未打开：%1</translation>
    </message>
    <message>
        <source>Run set %1.</source>
        <translation>训练已按配置设置（%1）。</translation>
    </message>
    <message>
        <source>Run set %1. Not on the panel, applied to every run: %2.</source>
        <translation>训练已按配置设置（%1）。面板上没有、但会用于之后每次训练的设置：%2。</translation>
    </message>
    <message>
        <source>Memory and log</source>
        <translation>内存与日志</translation>
    </message>
    <message>
        <source>Show or hide the memory bars and the log under the views: hidden, the view takes the whole height.</source>
        <translation>显示或隐藏视图下方的内存条形图和日志：隐藏后，视图占满整个高度。</translation>
    </message>
    <message>
        <source>Waits</source>
        <translation>等待</translation>
    </message>
    <message>
        <source>Ranks as processes run on the wall clock: the straggler setting slows a rank on the virtual clock of threads, so this run has none.</source>
        <translation>rank 作为进程时按墙钟计时：慢 rank 设置是在线程的虚拟时钟上放慢一个 rank，所以这次运行不使用它。</translation>
    </message>
    <message>
        <source>Also save every N steps (0: only when a run ends or is stopped).
A restart after a failure resumes from the latest one, so it repeats at most N − 1 finished steps.</source>
        <translation>另外每 N 步保存一次（0：只在运行结束或停止时保存）。
失败后的重启从最新的检查点继续，所以最多重跑 N − 1 个已完成的步。</translation>
    </message>
    <message>
        <source>Every run will save its training state and its Hugging Face weights to %1 every %2 steps and when it ends or is stopped (a step-NNNNNN folder each time).</source>
        <translation>之后每次运行每 %2 步以及结束或停止时，都会把训练状态和 Hugging Face 权重保存到 %1（每次一个 step-NNNNNN 文件夹）。</translation>
    </message>
    <message>
        <source>Tensor parallel</source>
        <translation>张量并行</translation>
    </message>
    <message>
        <source>Context parallel</source>
        <translation>上下文并行</translation>
    </message>
    <message>
        <source>Experts</source>
        <translation>专家</translation>
    </message>
    <message>
        <source>Real time: the views show the engine&apos;s events as they arrive; the ring&apos;s animation may fall behind and says by how many steps.</source>
        <translation>实时：各视图在引擎事件到达时立即显示；环形动画可能落后，并会标明落后几步。</translation>
    </message>
    <message>
        <source>One step, slowly</source>
        <translation>慢放一步</translation>
    </message>
    <message>
        <source>Draw the last completed step again, every transfer, at the chosen playback speed.</source>
        <translation>按所选回放速度重新绘制最近完成的一步，逐一画出每次传输。</translation>
    </message>
    <message>
        <source>Drawing step %1 again at %2.</source>
        <translation>以 %2 重新绘制第 %1 步。</translation>
    </message>
    <message>
        <source>Pin this run</source>
        <translation>固定本次运行</translation>
    </message>
    <message>
        <source>Keep this run&apos;s loss curve and memory bars on screen and draw the next run over and beside them, to compare two runs. Uncheck to clear.</source>
        <translation>保留本次运行的损失曲线和显存柱，并把下一次运行画在其上和旁边，以对比两次运行。取消勾选即清除。</translation>
    </message>
    <message>
        <source>Pinned: %1. The next run is drawn over and beside it.</source>
        <translation>已固定：%1。下一次运行将画在它之上和旁边。</translation>
    </message>
    <message>
        <source>Open schedule</source>
        <translation>打开调度</translation>
    </message>
    <message>
        <source>Pipeline schedule CSV (*.csv);;All files (*)</source>
        <translation>流水线调度 CSV (*.csv);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open &amp;schedule...</source>
        <translation>打开调度(&amp;S)...</translation>
    </message>
    <message>
        <source>Runs a pipeline schedule written by hand: torch.distributed.pipelining&apos;s CSV, a row per rank of {stage}{F|B|I|W}{micro-batch}, as train --schedule-file</source>
        <translation>运行手写的流水线调度：torch.distributed.pipelining 的 CSV，每个 rank 一行 {stage}{F|B|I|W}{micro-batch}，与 train --schedule-file 相同</translation>
    </message>
    <message>
        <source>Schedule not opened: %1</source>
        <translation>调度未打开：%1</translation>
    </message>
    <message>
        <source>Schedule not opened</source>
        <translation>调度未打开</translation>
    </message>
    <message>
        <source>Runs use the schedule in %1.</source>
        <translation>运行将使用 %1 中的调度。</translation>
    </message>
    <message>
        <source>Schedules</source>
        <translation>调度对比</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MemoryBars</name>
    <message>
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <source>activations</source>
        <translation>激活值</translation>
    </message>
    <message>
        <source>communication</source>
        <translation>通信缓冲区</translation>
    </message>
    <message>
        <source>workspace</source>
        <translation>工作区</translation>
    </message>
    <message>
        <source>MiB</source>
        <translation>MiB</translation>
    </message>
    <message>
        <source>Rank</source>
        <translation>rank（进程或线程编号）</translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation>rank %1</translation>
    </message>
    <message>
        <source>In use: the whole GPU as its driver counts it (every process). Allocator: what this rank&apos;s caching allocator holds, freed blocks kept for reuse included. Ledger: the bytes of the rank&apos;s live buffers.</source>
        <translation>已用：驱动统计的整块 GPU 用量（包括所有进程）。分配器：该 rank 的缓存分配器占用的内存，包括留待复用的已释放块。账本：该 rank 当前存活缓冲区的字节数。</translation>
    </message>
    <message>
        <source>Mixed precision: 16-bit parameters and gradients; fp32 master weights and Adam moments (optimizer states); fp32 activations; each unit&apos;s fp32 working copy while it runs (workspace).</source>
        <translation>混合精度：参数和梯度为 16 位；fp32 主权重和 Adam 动量（优化器状态）；fp32 激活值；每个单元运行时的 fp32 工作副本（工作区）。</translation>
    </message>
    <message>
        <source>GPU %1 (rank %2): %3 of %4 in use (cudaMemGetInfo); allocator holds %5; ledger %6</source>
        <translation>GPU %1（rank %2）：已用 %3 / %4（cudaMemGetInfo）；分配器占用 %5；账本 %6</translation>
    </message>
    <message>
        <source>Memory per rank: peak measured (solid), peak predicted (light)</source>
        <translation>每个 rank 的内存：实测峰值（实心），预测峰值（浅色）</translation>
    </message>
    <message>
        <source>Resident: the memory the operating system gives this process (VmRSS; peak: VmHWM), code, thread stacks and the data set included. Ledger: the bytes of the ranks&apos; live buffers, summed over the ranks.</source>
        <translation>常驻：操作系统分配给本进程的内存（VmRSS；峰值：VmHWM），包括代码、线程栈和数据集。账本：各 rank 现存缓冲区的字节数，按 rank 求和。</translation>
    </message>
    <message>
        <source>Process: %1 resident, peak %2 · ledger %3 now, peaks %4 (all ranks)</source>
        <translation>进程：常驻 %1，峰值 %2 · 账本当前 %3，峰值之和 %4（所有 rank）</translation>
    </message>
    <message>
        <source>rank %1
tp %2</source>
        <translation>rank %1
tp %2</translation>
    </message>
    <message>
        <source>Memory per rank: pinned run (hatched), this run (solid), predicted (light)</source>
        <translation>每个 rank 的显存：固定的运行（斜线），本次运行（实心），预测（浅色）</translation>
    </message>
    <message>
        <source>Hatched, left of each rank: the pinned run (%1). Solid: this run (%2).</source>
        <translation>斜线、位于每个 rank 左侧：固定的运行（%1）。实心：本次运行（%2）。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MemoryTimelinePlot</name>
    <message>
        <source>Memory over time (ledger total per rank)</source>
        <translation>内存随时间变化（各 rank 账本总量）</translation>
    </message>
    <message>
        <source>MiB</source>
        <translation>MiB</translation>
    </message>
    <message>
        <source>Rank %1</source>
        <translation>Rank %1</translation>
    </message>
    <message>
        <source>Time (s)</source>
        <translation>时间（秒）</translation>
    </message>
    <message>
        <source>Virtual time (s)</source>
        <translation>虚拟时间（秒）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PipelineTimelineView</name>
    <message>
        <source>stage %1
rank %2</source>
        <translation>阶段 %1
rank %2</translation>
    </message>
    <message>
        <source>%1 ms</source>
        <translation>%1 ms</translation>
    </message>
    <message>
        <source>forward (colour = micro-batch)</source>
        <translation>前向（颜色 = 微批次）</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>recompute (hatched)</source>
        <translation>重计算（斜线）</translation>
    </message>
    <message>
        <source>bubble (idle)</source>
        <translation>气泡（空闲）</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>recompute of layer %1</source>
        <translation>第 %1 层重计算</translation>
    </message>
    <message>
        <source>stage %1, rank %2
micro-batch %3, %4
start %5 ms, duration %6 ms</source>
        <translation>阶段 %1，rank %2
微批次 %3，%4
开始于 %5 ms，耗时 %6 ms</translation>
    </message>
    <message>
        <source>Step:</source>
        <translation>步：</translation>
    </message>
    <message>
        <source>last completed</source>
        <translation>最近完成的一步</translation>
    </message>
    <message>
        <source>The optimizer step to draw</source>
        <translation>要显示的优化器步</translation>
    </message>
    <message>
        <source>Step %1: %2</source>
        <translation>第 %1 步：%2</translation>
    </message>
    <message>
        <source>bubble measured –</source>
        <translation>实测气泡率 –</translation>
    </message>
    <message>
        <source>bubble measured %1%</source>
        <translation>实测气泡率 %1%</translation>
    </message>
    <message>
        <source>Replica:</source>
        <translation>副本：</translation>
    </message>
    <message>
        <source>The data-parallel replica (dp rank) to draw: its rank on every stage</source>
        <translation>要显示的数据并行副本（dp rank）：它在每个阶段上的 rank</translation>
    </message>
    <message>
        <source>formula (p−1)/(m+p−1) = (%1−1)/(%2+%1−1) = %3%</source>
        <translation>公式 (p−1)/(m+p−1) = (%1−1)/(%2+%1−1) = %3%</translation>
    </message>
    <message>
        <source>per flush %1</source>
        <translation>每轮%1</translation>
    </message>
    <message>
        <source>accumulation: k = %1 flushes of m = %2 micro-batches (F0–F%3), each fills and drains the pipeline; one flush of all %4 would idle %5%</source>
        <translation>梯度累积：k = %1 轮，每轮 m = %2 个微批次（F0–F%3），每轮都先填满再排空流水线；若全部 %4 个微批次在一轮内跑完，空闲仅 %5%</translation>
    </message>
    <message numerus="yes">
        <source>communication overlapped with backward: %1% (%n bucket(s))</source>
        <translation>
            <numerusform>通信与反向重叠：%1%（%n 个桶）</numerusform>
        </translation>
    </message>
    <message>
        <source>one stage: no pipeline bubble; no DDP bucket to overlap with backward</source>
        <translation>只有一个阶段：没有流水线气泡；也没有可与反向重叠的 DDP 桶</translation>
    </message>
    <message>
        <source>activation send → receive</source>
        <translation>激活值 发送 → 接收</translation>
    </message>
    <message>
        <source>gradient send → receive</source>
        <translation>梯度 发送 → 接收</translation>
    </message>
    <message>
        <source>bucket all-reduce (communication stream)</source>
        <translation>桶的 all-reduce（通信流）</translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation>all-reduce</translation>
    </message>
    <message>
        <source>No step yet: press Run.</source>
        <translation>还没有训练步：请点击“运行”。</translation>
    </message>
    <message>
        <source>activation of micro-batch %1</source>
        <translation>微批次 %1 的激活值</translation>
    </message>
    <message>
        <source>gradient of micro-batch %1</source>
        <translation>微批次 %1 的梯度</translation>
    </message>
    <message>
        <source>%1
stage %2 (rank %3) → stage %4 (rank %5), %6 bytes
sent %7 ms, arrived %8 ms</source>
        <translation>%1
阶段 %2（rank %3）→ 阶段 %4（rank %5），%6 字节
发送于 %7 ms，到达于 %8 ms</translation>
    </message>
    <message>
        <source>bucket %1 all-reduce, rank %2
one ring transfer of %3 bytes
start %4 ms, duration %5 ms</source>
        <translation>桶 %1 的 all-reduce，rank %2
一次环形传输，%3 字节
开始于 %4 ms，耗时 %5 ms</translation>
    </message>
    <message>
        <source>stage imbalance idles another %1% (idle in all %2%, GPipe&apos;s with these stages&apos; times %3%)</source>
        <translation>阶段不均衡另外造成 %1% 的空闲（总空闲 %2%，代入各阶段实测时间后 GPipe 为 %3%）</translation>
    </message>
    <message>
        <source>Tensor rank:</source>
        <translation>张量并行 rank：</translation>
    </message>
    <message>
        <source>The tensor-parallel rank of the replica to draw: each tp rank runs the schedule on its slice of every layer</source>
        <translation>要显示的副本的张量并行 rank：每个 tp rank 都在自己那一份层切片上运行整个调度</translation>
    </message>
    <message>
        <source>tensor-parallel collective (inside F/B)</source>
        <translation>张量并行集合通信（在 F/B 内）</translation>
    </message>
    <message>
        <source>schedule file %1</source>
        <translation>调度文件 %1</translation>
    </message>
    <message>
        <source>formula (p−1)/(v·m+p−1) = (%1−1)/(%2·%3+%1−1) = %4%</source>
        <translation>公式 (p−1)/(v·m+p−1) = (%1−1)/(%2·%3+%1−1) = %4%</translation>
    </message>
    <message>
        <source>formula (p−1)(T_F+T_B−T_W) with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced by the slowest stage %5%)</source>
        <translation>公式 (p−1)(T_F+T_B−T_W)，代入实测 T_F %1 ms、T_B %2 ms、T_W %3 ms = %4%（按最慢阶段计 %5%）</translation>
    </message>
    <message>
        <source>floor (p−1)·T_F with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced by the slowest stage %5%)</source>
        <translation>下限 (p−1)·T_F，代入实测 T_F %1 ms、T_B %2 ms、T_W %3 ms = %4%（按最慢阶段计 %5%）</translation>
    </message>
    <message>
        <source>W: weight gradients (striped)</source>
        <translation>W：权重梯度（条纹）</translation>
    </message>
    <message>
        <source>model chunk %1 (outlined)</source>
        <translation>模型块 %1（描边）</translation>
    </message>
    <message>
        <source>send between model chunks (dashed)</source>
        <translation>模型块之间的发送（虚线）</translation>
    </message>
    <message>
        <source>weight gradients (W)</source>
        <translation>权重梯度（W）</translation>
    </message>
    <message>
        <source>model chunk %1</source>
        <translation>模型块 %1</translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation>阶段 %1</translation>
    </message>
    <message>
        <source>Pinned: %1, step %2. %3</source>
        <translation>已固定：%1，第 %2 步。%3</translation>
    </message>
    <message>
        <source>The same numbers as shardscope-cli train&apos;s closing lines (summarize_schedule), for this step and replica.
Bubble measured: the fill and drain of each pipeline flush, each stage&apos;s idle time up to p − 1 times the slowest stage&apos;s time per micro-batch, over p × window; the median over the step&apos;s flushes.
Formula: the schedule&apos;s own: GPipe&apos;s and 1F1B&apos;s (p−1)/(m+p−1) for p equal stages and m micro-batches per flush, interleaved 1F1B&apos;s (p−1)/(v·m+p−1), ZB-H1&apos;s and ZB-H2&apos;s with the measured T_F, T_B, T_W.
Stage imbalance: the rest of the idle time, faster stages waiting for the slowest.
GPipe&apos;s with these stages&apos; times: GPipe&apos;s idle time with each stage&apos;s measured time per micro-batch.
Overlapped: the part of the ranks&apos; bucket transfers that lies inside their backward.</source>
        <translation>与 shardscope-cli train 结尾几行相同的数字（summarize_schedule），针对这一步和这个副本。
实测气泡率：每轮流水线的填充和排空，即各阶段的空闲时间（每个阶段最多计 p − 1 个最慢阶段处理一个微批次的时间），除以 p × 时间窗；取这一步各轮的中位数。
公式：所选调度自己的公式：GPipe 与 1F1B 为 (p−1)/(m+p−1)（p 个阶段一样长、每轮 m 个微批次），交错 1F1B 为 (p−1)/(v·m+p−1)，ZB-H1 与 ZB-H2 代入实测的 T_F、T_B、T_W。
阶段不均衡：其余的空闲时间，即较快的阶段等待最慢的阶段。
代入各阶段实测时间后 GPipe 的空闲时间：GPipe 按每个阶段处理一个微批次的实测时间计算的空闲时间。
重叠：各 rank 的桶传输中落在其反向计算之内的部分。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerBars</name>
    <message>
        <source>%1, zoomed</source>
        <translation>%1（放大）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerDialog</name>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Nodes</source>
        <translation>节点数</translation>
    </message>
    <message>
        <source>Activation bytes</source>
        <translation>激活值字节数</translation>
    </message>
    <message>
        <source>Memory planner</source>
        <translation>显存规划器</translation>
    </message>
    <message>
        <source>GPT-3 175B (example)</source>
        <translation>GPT-3 175B（示例）</translation>
    </message>
    <message>
        <source>Llama-2-7B (example)</source>
        <translation>Llama-2-7B（示例）</translation>
    </message>
    <message>
        <source>GPT-3 175B</source>
        <translation>GPT-3 175B</translation>
    </message>
    <message>
        <source>Llama-2-7B</source>
        <translation>Llama-2-7B</translation>
    </message>
    <message>
        <source>Import config.json / DeepSpeed / accelerate...</source>
        <translation>导入 config.json / DeepSpeed / accelerate……</translation>
    </message>
    <message>
        <source>A Hugging Face config.json, a DeepSpeed JSON and/or an accelerate YAML (select several at once): the same importers as shardscope-cli estimate --model, --deepspeed, --accelerate.</source>
        <translation>Hugging Face 的 config.json、DeepSpeed JSON 和/或 accelerate YAML（可一次选多个）：与 shardscope-cli estimate --model、--deepspeed、--accelerate 使用同一套导入器。</translation>
    </message>
    <message>
        <source>fp32</source>
        <translation>fp32</translation>
    </message>
    <message>
        <source>fp16 (mixed precision)</source>
        <translation>fp16（混合精度）</translation>
    </message>
    <message>
        <source>bf16 (mixed precision)</source>
        <translation>bf16（混合精度）</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>selective (attention core)</source>
        <translation>选择性（注意力核心）</translation>
    </message>
    <message>
        <source>full (each layer&apos;s input kept)</source>
        <translation>完全（只保留每层的输入）</translation>
    </message>
    <message>
        <source>formula sbh(34 + 5as/h)</source>
        <translation>公式 sbh(34 + 5as/h)</translation>
    </message>
    <message>
        <source>dp %1 × pp %2 = %3 GPUs, but the nodes have %4: the plan is per GPU either way.</source>
        <translation>dp %1 × pp %2 = %3 块 GPU，但各节点共有 %4 块：无论如何，规划都按每块 GPU 计算。</translation>
    </message>
    <message>
        <source>%1: %2 parameters (Ψ), %3 layers, hidden %4, %5 heads, vocabulary %6.</source>
        <translation>%1：%2 个参数（Ψ），%3 层，隐藏维度 %4，%5 个注意力头，词表 %6。</translation>
    </message>
    <message>
        <source>Could not load the model: %1</source>
        <translation>无法加载模型：%1</translation>
    </message>
    <message>
        <source>Import config</source>
        <translation>导入配置</translation>
    </message>
    <message>
        <source>Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation>配置文件：config.json、DeepSpeed JSON、accelerate YAML (*.json *.yaml *.yml);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Could not import %1: %2. The plan shown is the previous one.</source>
        <translation>无法导入 %1：%2。显示的仍是之前的规划。</translation>
    </message>
    <message>
        <source>Cannot plan these settings: %1. The plan shown is the previous one.</source>
        <translation>无法按这些设置规划：%1。显示的仍是之前的规划。</translation>
    </message>
    <message>
        <source>ZeRO-%1</source>
        <translation>ZeRO-%1</translation>
    </message>
    <message>
        <source>%1: %2 per GPU</source>
        <translation>%1：每块 GPU %2</translation>
    </message>
    <message>
        <source>ZeRO-%1 is refused for this layout: %2</source>
        <translation>此布局不能使用 ZeRO-%1：%2</translation>
    </message>
    <message numerus="yes">
        <source>ZeRO-%1 on %n GPU(s) (%2): %3</source>
        <translation>
            <numerusform>ZeRO-%1，%n 块 GPU（%2）：%3</numerusform>
        </translation>
    </message>
    <message>
        <source>Model states on the fullest GPU (rank %1): %2 = parameters %3 + gradients %4 + optimizer states %5. Sizes: GB = 10⁹ bytes.</source>
        <translation>占用最多的 GPU（rank %1）上的模型状态：%2 = 参数 %3 + 梯度 %4 + 优化器状态 %5。单位：GB = 10⁹ 字节。</translation>
    </message>
    <message>
        <source>ZeRO-%1, rank %2</source>
        <translation>ZeRO-%1，rank %2</translation>
    </message>
    <message>
        <source>total</source>
        <translation>合计</translation>
    </message>
    <message>
        <source>Basis:</source>
        <translation>依据：</translation>
    </message>
    <message>
        <source>%1 from %2</source>
        <translation>%1 来自 %2</translation>
    </message>
    <message>
        <source>Notes:</source>
        <translation>说明：</translation>
    </message>
    <message>
        <source>dp %1 × pp %2 = %3 GPUs = %4 × %5 (nodes × GPUs per node).</source>
        <translation>dp %1 × pp %2 = %3 块 GPU = %4 × %5（节点数 × 每节点 GPU 数）。</translation>
    </message>
    <message>
        <source>ShardScope (exact)</source>
        <translation>ShardScope（精确）</translation>
    </message>
    <message>
        <source>Exact: the bytes ShardScope&apos;s own kernels keep for backward (a model it implements). Formula: Korthikanti et al. 2022, sbh(34 + 5as/h) per layer, for Megatron-style implementations.</source>
        <translation>精确：ShardScope 自己的内核为反向传播保留的字节数（仅限它实现的模型）。公式：Korthikanti 等 2022，每层 sbh(34 + 5as/h)，适用于 Megatron 风格的实现。</translation>
    </message>
    <message>
        <source>Planning...</source>
        <translation>正在规划……</translation>
    </message>
    <message>
        <source>%1 from %2, overridden here</source>
        <translation>%1 来自 %2，已在此处覆盖</translation>
    </message>
    <message>
        <source>Layouts</source>
        <translation>布局</translation>
    </message>
    <message>
        <source>GPT-3 175B, 1024 A100s</source>
        <translation>GPT-3 175B，1024 块 A100</translation>
    </message>
    <message>
        <source>tp 8 × pp 8 × dp 16, batch 1536, fp16, full recompute (Narayanan et al. 2021)</source>
        <translation>tp 8 × pp 8 × dp 16，批大小 1536，fp16，完全重计算（Narayanan 等 2021）</translation>
    </message>
    <message>
        <source>Llama-2-70B, 8 H100s</source>
        <translation>Llama-2-70B，8 块 H100</translation>
    </message>
    <message>
        <source>tp 8 inside one node, bf16 (Megatron-LM&apos;s layout for a 70B model)</source>
        <translation>一个节点内 tp 8，bf16（Megatron-LM 对 70B 模型的布局）</translation>
    </message>
    <message>
        <source>dp %1 × pp %2 × tp %3 = %4 GPUs; the nodes have %5.</source>
        <translation>dp %1 × pp %2 × tp %3 = %4 块 GPU；节点共有 %5 块。</translation>
    </message>
    <message>
        <source>Llama-2-70B (example)</source>
        <translation>Llama-2-70B（示例）</translation>
    </message>
    <message>
        <source>dp %1 × pp %2 × tp %3 × cp %4 = %5 GPUs; the nodes have %6.</source>
        <translation>dp %1 × pp %2 × tp %3 × cp %4 = %5 块 GPU；节点共有 %6 块。</translation>
    </message>
    <message>
        <source>Time on %1 (a model, docs/ESTIMATE.md: every matmul at %2% of peak, nothing overlapped): %3 s per step, %4 tokens/s per GPU, %5 TFLOP/s per GPU, MFU %6%.</source>
        <translation>在 %1 上的时间（模型，见 docs/ESTIMATE.md：每个矩阵乘按峰值的 %2% 计算，不计重叠）：每步 %3 秒，每 GPU %4 tokens/s，每 GPU %5 TFLOP/s，MFU %6%。</translation>
    </message>
    <message>
        <source>Time on %1 (the kernel model, docs/PERFORMANCE.md: GEMMs from a measured table at the sustained clock, memory-bound kernels at the measured bandwidth, data-parallel traffic overlapped; %2% of peak reached): %3 s per step, %4 tokens/s per GPU, %5 TFLOP/s per GPU, MFU %6%.</source>
        <translation>%1 上的时间（内核模型，docs/PERFORMANCE.md：GEMM 按实测表格在持续时钟下计算，访存受限内核按实测带宽计算，数据并行通信与计算重叠；达到峰值的 %2%）：每步 %3 秒，每 GPU %4 tokens/s，每 GPU %5 TFLOP/s，MFU %6%。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerText</name>
    <message>
        <source>GPT-3 175B (example)</source>
        <translation>GPT-3 175B（示例）</translation>
    </message>
    <message>
        <source>Llama-2-7B (example)</source>
        <translation>Llama-2-7B（示例）</translation>
    </message>
    <message>
        <source>turn on activation checkpointing</source>
        <translation>开启激活检查点</translation>
    </message>
    <message>
        <source>selective activation recompute</source>
        <translation>选择性激活重计算</translation>
    </message>
    <message>
        <source>use DDP instead of naive DataParallel</source>
        <translation>用 DDP 代替朴素 DataParallel</translation>
    </message>
    <message>
        <source>offload the optimizer states to the CPU (ZeRO-Offload)</source>
        <translation>把优化器状态卸载到 CPU（ZeRO-Offload）</translation>
    </message>
    <message>
        <source>halve the micro-batch (same global batch)</source>
        <translation>微批大小减半（全局批大小不变）</translation>
    </message>
    <message>
        <source>mixed precision</source>
        <translation>混合精度</translation>
    </message>
    <message>
        <source>ZeRO-%1</source>
        <translation>ZeRO-%1</translation>
    </message>
    <message>
        <source>No GPU chosen: the fit is not checked.</source>
        <translation>未选择 GPU：不检查是否放得下。</translation>
    </message>
    <message>
        <source>fits: %1 free on the fullest GPU (rank %2).</source>
        <translation>放得下：占用最多的 GPU（rank %2）还剩 %1。</translation>
    </message>
    <message>
        <source>does not fit by %1 on rank %2</source>
        <translation>放不下，rank %2 超出 %1</translation>
    </message>
    <message>
        <source>%1 −%2 (then fits)</source>
        <translation>%1 −%2（即可放下）</translation>
    </message>
    <message>
        <source>%1 −%2</source>
        <translation>%1 −%2</translation>
    </message>
    <message>
        <source>%1: no single setting saves memory; add GPUs (data-parallel ranks or pipeline stages).</source>
        <translation>%1：没有哪一项设置能单独节省显存；请增加 GPU（数据并行 rank 或流水线阶段）。</translation>
    </message>
    <message>
        <source>%1: %2.</source>
        <translation>%1：%2。</translation>
    </message>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>fits, %1 free</source>
        <translation>放得下，剩余 %1</translation>
    </message>
    <message>
        <source>over by %1</source>
        <translation>超出 %1</translation>
    </message>
    <message>
        <source>Micro-batch per GPU</source>
        <translation>每卡微批大小</translation>
    </message>
    <message>
        <source>GPUs per node</source>
        <translation>每节点 GPU 数</translation>
    </message>
    <message>
        <source>Optimizer offload</source>
        <translation>优化器卸载</translation>
    </message>
    <message>
        <source>Parameter offload</source>
        <translation>参数卸载</translation>
    </message>
    <message>
        <source>Activation checkpointing</source>
        <translation>激活检查点</translation>
    </message>
    <message>
        <source>Tensor-parallel ranks</source>
        <translation>张量并行 rank 数</translation>
    </message>
    <message>
        <source>Sequence parallelism</source>
        <translation>序列并行</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ProcessJob</name>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RecordingController</name>
    <message>
        <source>Recording this run to %1</source>
        <translation>正在将本次运行录制到 %1</translation>
    </message>
    <message>
        <source>Cannot record to %1: %2</source>
        <translation>无法录制到 %1：%2</translation>
    </message>
    <message>
        <source>Recording to %1 stopped: %2</source>
        <translation>录制到 %1 已中止：%2</translation>
    </message>
    <message>
        <source>Recording to %1 failed: %2</source>
        <translation>录制到 %1 失败：%2</translation>
    </message>
    <message>
        <source>Recorded %1 events to %2</source>
        <translation>已将 %1 个事件录制到 %2</translation>
    </message>
    <message>
        <source>Cannot open %1: its run config is unusable: %2</source>
        <translation>无法打开 %1：其中的运行配置不可用：%2</translation>
    </message>
    <message>
        <source>Cannot open recording %1: %2</source>
        <translation>无法打开录制文件 %1：%2</translation>
    </message>
    <message>
        <source>Nothing to export: open a recording or record a run first.</source>
        <translation>没有可导出的内容：请先打开录制文件或录制一次运行。</translation>
    </message>
    <message>
        <source>Cannot export the Chrome trace to %1: %2</source>
        <translation>无法将 Chrome trace 导出到 %1：%2</translation>
    </message>
    <message>
        <source>Exported %1 events as a Chrome trace to %2</source>
        <translation>已将 %1 个事件以 Chrome trace 格式导出到 %2</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RingAllreduceView</name>
    <message>
        <source>Waiting for communication events: press Run.</source>
        <translation>等待通信事件：请点击“运行”。</translation>
    </message>
    <message>
        <source>Idle: every transfer replayed.</source>
        <translation>空闲：所有传输均已回放。</translation>
    </message>
    <message>
        <source>broadcast of the parameters from rank 0</source>
        <translation>rank 0 广播参数</translation>
    </message>
    <message>
        <source>scatter of the tokens from rank 0</source>
        <translation>rank 0 分发 token</translation>
    </message>
    <message>
        <source>gather of the gradients to rank 0</source>
        <translation>梯度收集到 rank 0</translation>
    </message>
    <message numerus="yes">
        <source>step %1 · %2 · %n transfer(s) of %3</source>
        <translation>
            <numerusform>第 %1 步 · %2 · %n 次传输，每次 %3</numerusform>
        </translation>
    </message>
    <message>
        <source>reduce-scatter</source>
        <translation>reduce-scatter</translation>
    </message>
    <message>
        <source>all-gather</source>
        <translation>all-gather</translation>
    </message>
    <message>
        <source>step %1 · bucket %2 · %3 step %4 of %5 · %6 per chunk</source>
        <translation>第 %1 步 · 桶 %2 · %3 第 %4/%5 轮 · 每块 %6</translation>
    </message>
    <message>
        <source>One data-parallel rank: nothing to reduce.</source>
        <translation>只有一个数据并行 rank：无需规约。</translation>
    </message>
    <message>
        <source>Step %1: rank 0 sent %2, received %3; a DDP ring would send 2(N−1)/N × %4 = %5 per rank.</source>
        <translation>第 %1 步：rank 0 发送 %2，接收 %3；若用 DDP 环形算法，每个 rank 只需发送 2(N−1)/N × %4 = %5。</translation>
    </message>
    <message>
        <source>DataParallel (naive): rank 0 scatters, broadcasts and gathers</source>
        <translation>DataParallel（朴素实现）：由 rank 0 分发、广播和收集</translation>
    </message>
    <message>
        <source>DDP ring all-reduce: reduce-scatter, then all-gather, per bucket</source>
        <translation>DDP 环形 all-reduce：每个桶先 reduce-scatter，再 all-gather</translation>
    </message>
    <message>
        <source>rank %1 sent %2</source>
        <translation>rank %1 发送 %2</translation>
    </message>
    <message>
        <source>received %1</source>
        <translation>接收 %1</translation>
    </message>
    <message>
        <source>c%1</source>
        <translation>c%1</translation>
    </message>
    <message>
        <source>params</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>tokens</source>
        <translation>token</translation>
    </message>
    <message>
        <source>grads</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>scatter (tokens)</source>
        <translation>scatter（token）</translation>
    </message>
    <message>
        <source>broadcast (parameters)</source>
        <translation>broadcast（参数）</translation>
    </message>
    <message>
        <source>gather (gradients)</source>
        <translation>gather（梯度）</translation>
    </message>
    <message>
        <source>Stage:</source>
        <translation>阶段：</translation>
    </message>
    <message>
        <source>Show the data-parallel ranks of this pipeline stage</source>
        <translation>显示该流水线阶段的数据并行 rank</translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation>阶段 %1</translation>
    </message>
    <message numerus="yes">
        <source>step %1 · NCCL: %n all-reduce call(s) on rank %2, %3 in all, %4 ms of GPU time</source>
        <translation>
            <numerusform>第 %1 步 · NCCL：rank %2 上 %n 次 all-reduce 调用，共 %3，GPU 时间 %4 ms</numerusform>
        </translation>
    </message>
    <message>
        <source>NCCL runs the ring inside its kernels: its chunk transfers are not events, so none is drawn.</source>
        <translation>NCCL 在自己的内核里完成环形通信：分块传输不产生事件，因此这里不画分块。</translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation>rank %1</translation>
    </message>
    <message>
        <source>the flat shards</source>
        <translation>扁平分片</translation>
    </message>
    <message>
        <source>the embeddings</source>
        <translation>嵌入层</translation>
    </message>
    <message>
        <source>the head</source>
        <translation>输出头</translation>
    </message>
    <message>
        <source>layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>step %1 · %2 of the %3 of %4 · ring step %5 of %6 · %7 per chunk</source>
        <translation>第 %1 步 · %4%3的 %2 · 环形第 %5 步（共 %6 步）· 每块 %7</translation>
    </message>
    <message>
        <source>ZeRO-1: reduce-scatter the gradients, update the own shard, all-gather the parameters</source>
        <translation>ZeRO-1：reduce-scatter 梯度，更新自己的分片，再 all-gather 参数</translation>
    </message>
    <message>
        <source>ZeRO-2: reduce-scatter each unit&apos;s gradients, all-gather the updated chunks</source>
        <translation>ZeRO-2：逐单元 reduce-scatter 梯度，再 all-gather 更新后的分块</translation>
    </message>
    <message>
        <source>ZeRO-3: all-gather each unit for forward and backward, reduce-scatter its gradients</source>
        <translation>ZeRO-3：前向和反向各 all-gather 每个单元，再 reduce-scatter 其梯度</translation>
    </message>
    <message>
        <source>Formula %1 = %2 bytes, with %3.</source>
        <translation>公式 %1 = %2 字节，其中 %3。</translation>
    </message>
    <message>
        <source>Parameters and gradients through rank 0: %1 bytes.</source>
        <translation>经过 rank 0 的参数与梯度：%1 字节。</translation>
    </message>
    <message>
        <source>Step %1: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes); none is a bottleneck.</source>
        <translation>第 %1 步：%2 个 rank 各发送 %3（rank %4：%5 字节，平均 %6 字节）；没有哪个 rank 成为瓶颈。</translation>
    </message>
    <message>
        <source>reduce-scatter (gradients)</source>
        <translation>reduce-scatter（梯度）</translation>
    </message>
    <message>
        <source>all-gather (parameters)</source>
        <translation>all-gather（参数）</translation>
    </message>
    <message>
        <source>Step %1 so far: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes).</source>
        <translation>第 %1 步（到目前为止）：%2 个 rank 各发送了 %3（rank %4：%5 字节，平均 %6 字节）。</translation>
    </message>
    <message numerus="yes">
        <source>%n step(s) behind the run: this step is drawn whole, then the newest.</source>
        <translation>
            <numerusform>落后训练 %n 步：先画完这一步，再跳到最新一步。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Skipped %n transfer(s) of earlier steps to catch up with the run.</source>
        <translation>
            <numerusform>为追上训练，跳过了之前各步的 %n 次传输。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RunController</name>
    <message>
        <source>the job&apos;s run config: %1</source>
        <translation>作业的运行配置：%1</translation>
    </message>
    <message>
        <source>stopped after step %1</source>
        <translation>在第 %1 步后停止</translation>
    </message>
    <message>
        <source>unknown error</source>
        <translation>未知错误</translation>
    </message>
    <message>
        <source>from the start (no checkpoint committed yet)</source>
        <translation>从头开始（还没有提交的检查点）</translation>
    </message>
    <message>
        <source>resuming from %1</source>
        <translation>从 %1 继续</translation>
    </message>
    <message>
        <source>restart %1 of %2 after the run failed (%3); %4</source>
        <translation>运行失败后第 %1 次重启（共 %2 次）（%3）；%4</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ScheduleCompareView</name>
    <message>
        <source>Not run for this layout: %1</source>
        <translation>此布局下未运行：%1</translation>
    </message>
    <message>
        <source>Running %1 steps...</source>
        <translation>正在运行 %1 步……</translation>
    </message>
    <message>
        <source>Waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>idle in all %1%, fill and drain %2% · %3
peak activations per stage: %4</source>
        <translation>总空闲 %1%，填充与排空 %2% · %3
各阶段激活值峰值：%4</translation>
    </message>
    <message>
        <source>Compare schedules</source>
        <translation>对比调度</translation>
    </message>
    <message>
        <source>The panel&apos;s model, pipeline stages and micro-batches (one data-parallel replica) under each schedule, %1 training steps each on the virtual clock, in the background. Each cell draws the last step, its bubble and its peak activations: the first step also allocates the buffers, which would blur the comparison.</source>
        <translation>面板上的模型、流水线阶段数和微批次数（一个数据并行副本）在每种调度下各训练 %1 步，使用虚拟时钟，在后台运行。每格绘制最后一步及其气泡和峰值激活：第一步还要分配缓冲区，会使对比失真。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::TensorParallelView</name>
    <message>
        <source>Layer:</source>
        <translation>层：</translation>
    </message>
    <message>
        <source>The transformer layer whose matrices and collectives are shown</source>
        <translation>显示其矩阵与集合通信的 Transformer 层</translation>
    </message>
    <message>
        <source>Run a model with Tensor-parallel ranks of 2 or more to see one layer&apos;s matrices split over the ranks.</source>
        <translation>将张量并行 rank 数设为 2 或以上并运行模型，即可看到一层的矩阵如何切分到各 rank 上。</translation>
    </message>
    <message>
        <source>Measured: no complete micro-batch of layer %1 yet.</source>
        <translation>实测：第 %1 层还没有完整的微批次。</translation>
    </message>
    <message>
        <source>rank %1: %2 B</source>
        <translation>rank %1：%2 B</translation>
    </message>
    <message>
        <source>Measured bytes sent per rank for layer %1 (step %2, micro-batch %3): %4</source>
        <translation>第 %1 层每个 rank 实测发送的字节（第 %2 步，微批次 %3）：%4</translation>
    </message>
    <message>
        <source>Formula per rank per layer per micro-batch: %1 = %2 B with %3</source>
        <translation>公式（每 rank、每层、每微批次）：%1 = %2 B，其中 %3</translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation>all-reduce</translation>
    </message>
    <message>
        <source>all-gather</source>
        <translation>all-gather</translation>
    </message>
    <message>
        <source>reduce-scatter</source>
        <translation>reduce-scatter</translation>
    </message>
    <message>
        <source>collective</source>
        <translation>集合通信</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>%1, %2</source>
        <translation>%1，%2</translation>
    </message>
    <message>
        <source>step %1, micro-batch %2</source>
        <translation>第 %1 步，微批次 %2</translation>
    </message>
    <message>
        <source>Attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>W_qkv: C × 3C/t per rank
= %1 × %2, split by column</source>
        <translation>W_qkv：每 rank C × 3C/t
= %1 × %2，按列切分</translation>
    </message>
    <message>
        <source>W_o: C/t × C per rank
= %1 × %2, split by row</source>
        <translation>W_o：每 rank C/t × C
= %1 × %2，按行切分</translation>
    </message>
    <message>
        <source>attention:
%1 of %2 heads
per rank</source>
        <translation>注意力：
每 rank %2 个头
中的 %1 个</translation>
    </message>
    <message>
        <source>MLP</source>
        <translation>MLP</translation>
    </message>
    <message>
        <source>W_fc: C × 4C/t per rank
= %1 × %2, split by column</source>
        <translation>W_fc：每 rank C × 4C/t
= %1 × %2，按列切分</translation>
    </message>
    <message>
        <source>W_proj: 4C/t × C per rank
= %1 × %2, split by row</source>
        <translation>W_proj：每 rank 4C/t × C
= %1 × %2，按行切分</translation>
    </message>
    <message>
        <source>GELU,
per rank</source>
        <translation>GELU，
各 rank 独立</translation>
    </message>
    <message>
        <source>r%1</source>
        <translation>r%1</translation>
    </message>
    <message>
        <source>identity forward,
all-reduce backward</source>
        <translation>前向恒等，
反向 all-reduce</translation>
    </message>
    <message>
        <source>all-reduce forward,
identity backward</source>
        <translation>前向 all-reduce，
反向恒等</translation>
    </message>
    <message>
        <source>tp rank %1 = rank %2</source>
        <translation>tp rank %1 = rank %2</translation>
    </message>
    <message>
        <source>Layer %1 of %2 (stage %3), split over t = %4 tensor-parallel ranks %5 of data-parallel rank 0. %6 collectives of this layer seen.</source>
        <translation>第 %1 层（共 %2 层，阶段 %3），切分到数据并行 rank 0 的 t = %4 个张量并行 rank（%5）上。已看到本层 %6 次集合通信。</translation>
    </message>
    <message>
        <source>This run has one tensor-parallel rank, so every layer&apos;s matrices stay whole. With Tensor-parallel ranks t of 2 or more (train --tp t), this view draws one layer&apos;s weight matrices split over the t ranks (QKV and the MLP&apos;s first linear by column, the output projection and the MLP&apos;s second linear by row), lights up each all-reduce as its event arrives, and counts its bytes against %1.</source>
        <translation>本次运行只有一个张量并行 rank，每层的矩阵都是完整的。当张量并行 rank 数 t 为 2 或以上（train --tp t）时，此视图画出一层的权重矩阵在 t 个 rank 上的切分（QKV 和 MLP 的第一个线性层按列切分，输出投影和 MLP 的第二个线性层按行切分），每个 all-reduce 的事件到达时将其点亮，并把其字节数与 %1 对照。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ThroughputPlot</name>
    <message>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Rank %1</source>
        <translation>Rank %1</translation>
    </message>
    <message>
        <source>this machine&apos;s cores</source>
        <translation>本机 CPU 核</translation>
    </message>
    <message>
        <source>measured host tokens/s (wall clock)</source>
        <translation>本机实测 tokens/s（墙钟）</translation>
    </message>
    <message>
        <source>modeled tokens/s on %1</source>
        <translation>在 %1 上建模的 tokens/s</translation>
    </message>
    <message>
        <source>Modeled: the global batch × sequence length over the step&apos;s time on the virtual clock, the device each rank is modeled on (the GPU profile&apos;s GPU, or this machine&apos;s cores: each rank&apos;s CPU time). Not drawn on the wall clock.
Measured host: the same tokens over the step&apos;s wall time on this machine, every rank sharing its cores.
Rank r: the tokens of its data-parallel replica per step (global batch × sequence length / dp) divided by the time between the ends of r&apos;s consecutive optimizer spans, on the run&apos;s clock; dashed, in the rank&apos;s colour of the memory plot.
Every pipeline stage of a replica sees all of its tokens; a slow rank falls below the others.</source>
        <translation>建模：全局批大小 × 序列长度，除以该步在虚拟时钟上的时长；虚拟时钟所建模的设备是 GPU 配置中的 GPU，或本机 CPU 核（每个 rank 的 CPU 时间）。使用墙钟时不绘制。
本机实测：同样的 token 数，除以该步在本机上的墙钟时间（所有 rank 共享本机 CPU 核）。
Rank r：其数据并行副本每步的 token 数（全局批大小 × 序列长度 / dp），除以 r 相邻两次优化器区段结束之间的时间（按本次运行的时钟）；虚线，颜色与内存图中该 rank 的颜色相同。
一个副本的每个流水线阶段都看到它的全部 token；慢的 rank 会低于其他 rank。</translation>
    </message>
    <message>
        <source>modeled on %1
(virtual clock)</source>
        <translation>在 %1 上建模
（虚拟时钟）</translation>
    </message>
    <message>
        <source>tokens/s: modeled,
measured host</source>
        <translation>tokens/s：建模、
本机实测</translation>
    </message>
    <message>
        <source>tokens/s (wall clock)</source>
        <translation>tokens/s（墙钟）</translation>
    </message>
    <message>
        <source>measured host
(wall clock)</source>
        <translation>本机实测
（墙钟）</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::WaitsView</name>
    <message>
        <source>rank %1 (slow)</source>
        <translation>rank %1（慢）</translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation>rank %1</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>optimizer</source>
        <translation>优化器</translation>
    </message>
    <message>
        <source>waiting (→ r: for that rank)</source>
        <translation>等待（→ r：在等那个 rank）</translation>
    </message>
    <message>
        <source>rank %1 waited %2 ms for rank %3 (%4)</source>
        <translation>rank %1 为 rank %3 等待了 %2 ms（%4）</translation>
    </message>
    <message>
        <source>rank %1: %2, %3 ms</source>
        <translation>rank %1：%2，%3 ms</translation>
    </message>
    <message>
        <source>Step:</source>
        <translation>步：</translation>
    </message>
    <message>
        <source>last completed</source>
        <translation>最近完成的一步</translation>
    </message>
    <message>
        <source>The optimizer step to draw</source>
        <translation>要显示的优化器步</translation>
    </message>
    <message>
        <source>A rank that reaches a collective or a receive before the others idles until they get there. On the virtual clock the communicator reports each wait with the rank it waited for, passing that name on round the ring, so a straggler is named by every rank it holds up.</source>
        <translation>先到达集合通信或接收操作的 rank 会空等，直到其他 rank 到达。在虚拟时钟上，通信器报告每次等待以及它在等哪个 rank，并把这个名字沿环传下去，所以掉队者会被它拖住的每个 rank 点名。</translation>
    </message>
    <message>
        <source>Each rank&apos;s compute, and the time it waited for another rank at a collective or a receive (none yet).</source>
        <translation>每个 rank 的计算，以及它在集合通信或接收处等待其他 rank 的时间（暂无）。</translation>
    </message>
    <message>
        <source>Step %1: the ranks waited %2 ms in all; %3% of it for rank %4.</source>
        <translation>第 %1 步：各 rank 共等待 %2 ms；其中 %3% 是在等 rank %4。</translation>
    </message>
    <message>
        <source>Its compute takes %1× as long (straggler setting %2:%1).</source>
        <translation>它的计算耗时是 %1 倍（慢 rank 设置 %2:%1）。</translation>
    </message>
    <message>
        <source>Rank %1 failed at step %2: %3.</source>
        <translation>rank %1 在第 %2 步失败：%3。</translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ZeroView</name>
    <message>
        <source>shard %1</source>
        <translation>分片 %1</translation>
    </message>
    <message>
        <source>emb</source>
        <translation>emb</translation>
    </message>
    <message>
        <source>head</source>
        <translation>head</translation>
    </message>
    <message>
        <source>L%1</source>
        <translation>L%1</translation>
    </message>
    <message>
        <source>Waiting for events: press Run.</source>
        <translation>等待事件：请点击“运行”。</translation>
    </message>
    <message>
        <source>Step %1, all ranks: %2 gathers, %3 releases, %4 reduce-scatters, %5 all-gathers</source>
        <translation>第 %1 步，全部 rank：gather %2 次，释放 %3 次，reduce-scatter %4 次，all-gather %5 次</translation>
    </message>
    <message>
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <source>not held</source>
        <translation>未持有</translation>
    </message>
    <message>
        <source>gathered / active just now</source>
        <translation>已 gather / 刚刚活跃</translation>
    </message>
    <message>
        <source>active just now</source>
        <translation>刚刚活跃</translation>
    </message>
    <message>
        <source>Each unit is split into %1 chunks; data-parallel rank r owns chunk r (outlined).</source>
        <translation>每个单元被切分为 %1 块；数据并行 rank r 持有第 r 块（带边框）。</translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation>rank %1</translation>
    </message>
    <message>
        <source>%1 gathered now</source>
        <translation>当前已 gather %1 个</translation>
    </message>
    <message>
        <source>%1 reduce-scatters</source>
        <translation>reduce-scatter %1 次</translation>
    </message>
    <message>
        <source>%1 all-gathers</source>
        <translation>all-gather %1 次</translation>
    </message>
    <message>
        <source>ZeRO: this run&apos;s model is unknown to the engine</source>
        <translation>ZeRO：引擎不认识这次运行的模型</translation>
    </message>
    <message>
        <source>ZeRO-0 (replicated): %1 per rank · Nd = %2</source>
        <translation>ZeRO-0（全量复制）：每个 rank %1 · Nd = %2</translation>
    </message>
    <message>
        <source>ZeRO-1: %1 per rank · Nd = %2 (optimizer states sharded)</source>
        <translation>ZeRO-1：每个 rank %1 · Nd = %2（优化器状态分片）</translation>
    </message>
    <message>
        <source>ZeRO-2: %1 per rank · Nd = %2 (+ gradients sharded)</source>
        <translation>ZeRO-2：每个 rank %1 · Nd = %2（另加梯度分片）</translation>
    </message>
    <message>
        <source>ZeRO-3: %1 per rank · Nd = %2 (+ parameters sharded)</source>
        <translation>ZeRO-3：每个 rank %1 · Nd = %2（另加参数分片）</translation>
    </message>
    <message>
        <source>P %1 · G %2 · OS %3</source>
        <translation>参数 %1 · 梯度 %2 · 优化器状态 %3</translation>
    </message>
    <message>
        <source>%1 (plan)</source>
        <translation>%1（计划）</translation>
    </message>
    <message>
        <source>Each rank holds only its pipeline stage&apos;s units; the last stage keeps a copy of the tied token embedding (emb) for its head.</source>
        <translation>每个 rank 只持有它所在流水线阶段的单元；最后一个阶段为输出头保留一份绑定的词嵌入副本（emb）。</translation>
    </message>
    <message>
        <source>rank %1 · stage %2</source>
        <translation>rank %1 · 阶段 %2</translation>
    </message>
    <message>
        <source>tp %1</source>
        <translation>tp %1</translation>
    </message>
    <message>
        <source>Tensor parallelism: each row is one tp rank&apos;s slice, 1/%1 of every layer&apos;s split matrices; the %2 data-parallel ranks with the same tp rank each hold that slice whole.</source>
        <translation>张量并行：每一行是一个 tp rank 的切片，即每层被切分矩阵的 1/%1；tp rank 相同的 %2 个数据并行 rank 各自完整持有这一切片。</translation>
    </message>
    <message>
        <source>Tensor parallelism: each row is one tp rank&apos;s slice, 1/%1 of every layer&apos;s split matrices; ZeRO shards that slice over the %2 data-parallel ranks with the same tp rank.</source>
        <translation>张量并行：每一行是一个 tp rank 的切片，即每层被切分矩阵的 1/%1；ZeRO 把这一切片分片到 tp rank 相同的 %2 个数据并行 rank 上。</translation>
    </message>
</context>
</TS>
