<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>shardscope::ui::ConfigPanel</name>
    <message>
        <source>DDP (ring all-reduce)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>DataParallel (naive, rank 0 master)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recompute each layer in backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>LayerNorms on seq / tp tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>%n rank(s): dp %1 × tp %2 × pp %3; each rank runs micro-batches of %4 sequence(s).</source>
        <translation>
            <numerusform>%n rank: dp %1 × tp %2 × pp %3; each rank runs micro-batches of %4 sequence(s).</numerusform>
            <numerusform>%n ranks: dp %1 × tp %2 × pp %3; each rank runs micro-batches of %4 sequence(s).</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n rank(s): dp %1 × tp %2 × pp %3.</source>
        <translation>
            <numerusform>%n rank: dp %1 × tp %2 × pp %3.</numerusform>
            <numerusform>%n ranks: dp %1 × tp %2 × pp %3.</numerusform>
        </translation>
    </message>
    <message>
        <source>Cannot run: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Training text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Empty: the shipped corpus (English + Chinese)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Browse...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the data file %1 does not exist</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the data file %1 cannot be read</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Text files (*.txt);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>never</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>CPU: simulated ranks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU %1: %2 (%3), all ranks share it</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>One rank per GPU (%n GPU(s), NCCL)</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <source>No GPU: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Looking for GPUs...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>one rank per GPU needs %1 GPUs (dp × pp); this machine has %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Checks the estimator&apos;s prediction against this GPU&apos;s memory; with none, a GPU run is checked against the GPU chosen above. It is advice: it never blocks Run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU %1 and the others</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fits: %1 predicted for all %2 ranks ≤ %3 (%4)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Does not fit: %1 predicted for all %2 ranks &gt; %3 (%4)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fits: %1 predicted per rank ≤ %2 (%3)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Does not fit: %1 predicted per rank &gt; %2 (%3)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ranks run as</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>threads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>processes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>threads: every rank in this program; processes: one process per rank, started with shardscope-cli launch (mpirun), their events streamed back here</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The model&apos;s %1 layers do not split evenly over %2 stages (%3 layers): the stages with fewer layers wait for the slowest one, and the bubble line counts that wait as stage imbalance.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Model and data</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Parallel layout</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Precision</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Clock and device</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Restarts after a failure</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>When a rank fails (or its process dies or freezes), start the run again from the latest checkpoint (File → Save checkpoints to...), at most this many times, as torchrun&apos;s --max-restarts does</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>None (File → Open schedule...)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ContextParallelView</name>
    <message>
        <source>Layer:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The transformer layer whose ring attention is shown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Forward: key/value blocks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Backward: blocks and their gradients</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run a model with Context-parallel ranks of 2 or more to see ring attention&apos;s blocks travel.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This run has one context-parallel rank, so every rank attends over its whole sequences. With Context-parallel ranks of 2 or more (train --cp 2), each rank keeps seq/cp tokens of every sequence and this view draws the key/value blocks travelling the ring, each rank&apos;s attention tiles filling in as the blocks arrive, and the causal mask&apos;s work per rank under the zig-zag or contiguous split.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>no causal mask: every tile is whole</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>contiguous: rank r&apos;s chunks 2r and 2r+1 give it 4r+2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Work per rank (tiles kept by the mask, a diagonal tile counts ½): %1 (%2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ring: no blocks of layer %1 in this pass yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>step %1: %2 B</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bytes on the ring per ring step (step %1, micro-batch %2): %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Sent per rank in this pass: %1 B; formula %2 = %3 B with %4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>dK/dV %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>K/V %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>r%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ring step %1 of %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Attention tiles: query chunks ↓, key chunks →</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>r%1 q%2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>zig-zag split</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>contiguous split</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layer %1: ring attention over cp = %2 ranks, %3. No blocks of this pass yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layer %1: ring attention over cp = %2 ranks, %3; step %4, micro-batch %5, %6 sends of this pass seen.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>zig-zag: chunks r and 2cp−1−r give every rank 2cp = %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ExpertsView</name>
    <message>
        <source>Layer:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The MoE layer whose routing and all-to-all are shown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run a mixture-of-experts model (gpt-tiny-moe) to see tokens routed to experts.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This model is dense: every token runs the same MLP. Choose a mixture-of-experts model (--model gpt-tiny-moe, with Expert-parallel ranks of 2 or more for the all-to-all) to see the tokens each expert takes per step against its capacity, the dropped choices, the load-balancing loss and the bytes the all-to-all moves between ranks.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layer %1 has a dense MLP; choose a MoE layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>capacity ceil(%1 · %2 tokens · k %3 / E %4) = %5 per forward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Routing: no step of layer %1 yet; %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1, layer %2: %3 choices routed, %4 dropped (%5%); %6, %7 places per expert over the step.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>All-to-all: every expert on every rank (Expert-parallel ranks 1): no tokens travel. Run with --ep 2 to send each choice to its expert&apos;s rank.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>All-to-all of layer %1 in step %2 (dispatch and combine, forward and backward): %3 B between ranks.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choices per expert this step (bars) against capacity (dashed)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>expert %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>capacity %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Load-balancing loss E·Σ f·P: no step yet</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Load-balancing loss E·Σ f·P: %1 at step %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>All-to-all bytes: row sends to column</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>r%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>local</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 experts, top-%2 routing, over %3 rank(s) with the experts split over ep = %4.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::HiddenStatesView</name>
    <message>
        <source>Hugging Face model folder (config.json, model.safetensors, tokenizer.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Model folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Compute</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>mean token norm |h| (left)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>mean cosine between tokens (right)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>norm</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>cosine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layer %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Running the model over the text…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot compute: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 (%2): %3 layers, %4 channels; %5 tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Press Compute to run a pretrained model over the text. all-MiniLM-L6-v2 is fetched by bash scripts/fetch_minilm.sh; any GPT-2 or BERT folder with config.json, model.safetensors and tokenizer.json works.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>cos(a, b) = a·b / (|a| |b|) between every two tokens of hidden state %1; mean over different tokens = %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>cos(a, b) = a·b / (|a| |b|): 1 for the same direction, 0 for unrelated vectors</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>hidden state (0: embeddings)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LessonsPanel</name>
    <message>
        <source>Try it: load this run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loads the lesson&apos;s settings into the panel; press Run to train.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pin, then try %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>After the lesson&apos;s run: pins it (loss curve and memory bars stay) and loads the run it is compared with; press Run to draw both.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LossPlot</name>
    <message>
        <source>Loss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cross-entropy loss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Training loss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Eval loss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Training loss (%1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Previous run (%1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pinned run (%1)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::LossScalePlot</name>
    <message>
        <source>Loss scale (fp16)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loss scale (log)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loss scale</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Overflow: step skipped</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MainWindow</name>
    <message>
        <source>Loss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pipeline</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ring all-reduce</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ready: press Run to train on simulated ranks (threads on the CPU).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ShardScope</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step once</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Stop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Engine log and errors appear here.</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>Starting %1 on %n rank(s)...</source>
        <translation>
            <numerusform>Starting %1 on %n rank...</numerusform>
            <numerusform>Starting %1 on %n ranks...</numerusform>
        </translation>
    </message>
    <message>
        <source>Error: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1 of %2: loss %3, %4 tokens/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run failed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>Stopped after %n step(s).</source>
        <translation>
            <numerusform>Stopped after %n step.</numerusform>
            <numerusform>Stopped after %n steps.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Finished: %n step(s).</source>
        <translation>
            <numerusform>Finished: %n step.</numerusform>
            <numerusform>Finished: %n steps.</numerusform>
        </translation>
    </message>
    <message>
        <source>Train with these settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot run: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Resume</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pause</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open recording</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ShardScope recordings (*.ssrun);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Record next run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ShardScope recordings (*.ssrun)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The next run will be recorded to %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Export Chrome trace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Chrome traces (*.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Open recording...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Record next run...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Export Chrome trace...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replay time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Drag to replay the recording up to this time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 s of %2 s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Opened recording %1: %2 events.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Live plots</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Playback speed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>1× (real time)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>½×</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>¼×</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>1/10×</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Slow motion for teaching: the views replay each step&apos;s events at this fraction of real time, and the engine waits between steps until they have. The training math is unchanged.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Window closed during the run: training stopped, nothing saved.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Slow motion: the views replay each step at %1 speed; training waits between steps.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1 step %2: inf/NaN in %3 at loss scale %4; the step is skipped</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Lessons</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Lessons</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Show lessons</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>trace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>debug</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>info</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>warning</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>error</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>critical</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Import config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Plan memory...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Per-GPU memory of any model at ZeRO stages 0-3, with formulas and a verdict</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Import config (config.json, DeepSpeed, accelerate)...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1, batch %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>, %1 accumulation steps of %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>, checkpointing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Hidden states</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save &amp;checkpoints to...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Res&amp;ume from checkpoint...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save checkpoints to</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Every run will save its training state and its Hugging Face weights to %1 when it ends or is stopped (a step-NNNNNN folder each time).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Resume from checkpoint (a step-NNNNNN folder, or the folder that holds them)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The next run resumes from step %1 of %2 (set Steps above %1; the model and seed must be the saved ones, the layout may change).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Not a checkpoint: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Attach to a job</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Listen on port (this machine only); start the job with
train ... --events-to 127.0.0.1:PORT</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>&amp;Attach to a job...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Show the events of a job started from a shell with --events-to</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot attach: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Waiting for a job on 127.0.0.1:%1 (train ... --events-to 127.0.0.1:%1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>Attached: %1 on %n rank(s)</source>
        <translation>
            <numerusform>Attached: %1 on %n rank</numerusform>
            <numerusform>Attached: %1 on %n ranks</numerusform>
        </translation>
    </message>
    <message>
        <source>Open config for a run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>DeepSpeed JSON or accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open &amp;config for a run (DeepSpeed, accelerate)...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Sets the panel from a DeepSpeed JSON or an accelerate YAML, as train --deepspeed / --accelerate does</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Config not opened: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run set %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run set %1. Not on the panel, applied to every run: %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Memory and log</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Show or hide the memory bars and the log under the views: hidden, the view takes the whole height.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Waits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ranks as processes run on the wall clock: the straggler setting slows a rank on the virtual clock of threads, so this run has none.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Also save every N steps (0: only when a run ends or is stopped).
A restart after a failure resumes from the latest one, so it repeats at most N − 1 finished steps.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Every run will save its training state and its Hugging Face weights to %1 every %2 steps and when it ends or is stopped (a step-NNNNNN folder each time).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tensor parallel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Real time: the views show the engine&apos;s events as they arrive; the ring&apos;s animation may fall behind and says by how many steps.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>One step, slowly</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Draw the last completed step again, every transfer, at the chosen playback speed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Drawing step %1 again at %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pin this run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Keep this run&apos;s loss curve and memory bars on screen and draw the next run over and beside them, to compare two runs. Uncheck to clear.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pinned: %1. The next run is drawn over and beside it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open schedule</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pipeline schedule CSV (*.csv);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open &amp;schedule...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Runs a pipeline schedule written by hand: torch.distributed.pipelining&apos;s CSV, a row per rank of {stage}{F|B|I|W}{micro-batch}, as train --schedule-file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Schedule not opened: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Schedule not opened</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Runs use the schedule in %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Schedules</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Context parallel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Experts</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MemoryBars</name>
    <message>
        <source>parameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gradients</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>activations</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>communication</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>workspace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rank</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>In use: the whole GPU as its driver counts it (every process). Allocator: what this rank&apos;s caching allocator holds, freed blocks kept for reuse included. Ledger: the bytes of the rank&apos;s live buffers.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Mixed precision: 16-bit parameters and gradients; fp32 master weights and Adam moments (optimizer states); fp32 activations; each unit&apos;s fp32 working copy while it runs (workspace).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU %1 (rank %2): %3 of %4 in use (cudaMemGetInfo); allocator holds %5; ledger %6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Memory per rank: peak measured (solid), peak predicted (light)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Resident: the memory the operating system gives this process (VmRSS; peak: VmHWM), code, thread stacks and the data set included. Ledger: the bytes of the ranks&apos; live buffers, summed over the ranks.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Process: %1 resident, peak %2 · ledger %3 now, peaks %4 (all ranks)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1
tp %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Memory per rank: pinned run (hatched), this run (solid), predicted (light)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Hatched, left of each rank: the pinned run (%1). Solid: this run (%2).</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::MemoryTimelinePlot</name>
    <message>
        <source>Memory over time (ledger total per rank)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Time (s)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Virtual time (s)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PipelineTimelineView</name>
    <message>
        <source>stage %1
rank %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>forward (colour = micro-batch)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>recompute (hatched)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bubble (idle)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>forward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>recompute of layer %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>stage %1, rank %2
micro-batch %3, %4
start %5 ms, duration %6 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>last completed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The optimizer step to draw</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bubble measured –</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bubble measured %1%</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Replica:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The data-parallel replica (dp rank) to draw: its rank on every stage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>formula (p−1)/(m+p−1) = (%1−1)/(%2+%1−1) = %3%</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>per flush %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>accumulation: k = %1 flushes of m = %2 micro-batches (F0–F%3), each fills and drains the pipeline; one flush of all %4 would idle %5%</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>communication overlapped with backward: %1% (%n bucket(s))</source>
        <translation>
            <numerusform>communication overlapped with backward: %1% (%n bucket)</numerusform>
            <numerusform>communication overlapped with backward: %1% (%n buckets)</numerusform>
        </translation>
    </message>
    <message>
        <source>one stage: no pipeline bubble; no DDP bucket to overlap with backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>activation send → receive</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gradient send → receive</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bucket all-reduce (communication stream)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No step yet: press Run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>activation of micro-batch %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gradient of micro-batch %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1
stage %2 (rank %3) → stage %4 (rank %5), %6 bytes
sent %7 ms, arrived %8 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bucket %1 all-reduce, rank %2
one ring transfer of %3 bytes
start %4 ms, duration %5 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>stage imbalance idles another %1% (idle in all %2%, GPipe&apos;s with these stages&apos; times %3%)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tensor rank:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The tensor-parallel rank of the replica to draw: each tp rank runs the schedule on its slice of every layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tensor-parallel collective (inside F/B)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>schedule file %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>formula (p−1)/(v·m+p−1) = (%1−1)/(%2·%3+%1−1) = %4%</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>formula (p−1)(T_F+T_B−T_W) with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced by the slowest stage %5%)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>floor (p−1)·T_F with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced by the slowest stage %5%)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>W: weight gradients (striped)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>model chunk %1 (outlined)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>send between model chunks (dashed)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>weight gradients (W)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>model chunk %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pinned: %1, step %2. %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The same numbers as shardscope-cli train&apos;s closing lines (summarize_schedule), for this step and replica.
Bubble measured: the fill and drain of each pipeline flush, each stage&apos;s idle time up to p − 1 times the slowest stage&apos;s time per micro-batch, over p × window; the median over the step&apos;s flushes.
Formula: the schedule&apos;s own: GPipe&apos;s and 1F1B&apos;s (p−1)/(m+p−1) for p equal stages and m micro-batches per flush, interleaved 1F1B&apos;s (p−1)/(v·m+p−1), ZB-H1&apos;s and ZB-H2&apos;s with the measured T_F, T_B, T_W.
Stage imbalance: the rest of the idle time, faster stages waiting for the slowest.
GPipe&apos;s with these stages&apos; times: GPipe&apos;s idle time with each stage&apos;s measured time per micro-batch.
Overlapped: the part of the ranks&apos; bucket transfers that lies inside their backward.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerBars</name>
    <message>
        <source>%1, zoomed</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerDialog</name>
    <message>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Examples</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Nodes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Activation bytes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Memory planner</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPT-3 175B (example)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Llama-2-7B (example)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPT-3 175B</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Llama-2-7B</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Import config.json / DeepSpeed / accelerate...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A Hugging Face config.json, a DeepSpeed JSON and/or an accelerate YAML (select several at once): the same importers as shardscope-cli estimate --model, --deepspeed, --accelerate.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>fp32</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>fp16 (mixed precision)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>bf16 (mixed precision)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>selective (attention core)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>full (each layer&apos;s input kept)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>formula sbh(34 + 5as/h)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>dp %1 × pp %2 = %3 GPUs, but the nodes have %4: the plan is per GPU either way.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1: %2 parameters (Ψ), %3 layers, hidden %4, %5 heads, vocabulary %6.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Could not load the model: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Import config</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Could not import %1: %2. The plan shown is the previous one.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot plan these settings: %1. The plan shown is the previous one.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1: %2 per GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-%1 is refused for this layout: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>ZeRO-%1 on %n GPU(s) (%2): %3</source>
        <translation>
            <numerusform>ZeRO-%1 on %n GPU (%2): %3</numerusform>
            <numerusform>ZeRO-%1 on %n GPUs (%2): %3</numerusform>
        </translation>
    </message>
    <message>
        <source>Model states on the fullest GPU (rank %1): %2 = parameters %3 + gradients %4 + optimizer states %5. Sizes: GB = 10⁹ bytes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-%1, rank %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>total</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Basis:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 from %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Notes:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>dp %1 × pp %2 = %3 GPUs = %4 × %5 (nodes × GPUs per node).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ShardScope (exact)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Exact: the bytes ShardScope&apos;s own kernels keep for backward (a model it implements). Formula: Korthikanti et al. 2022, sbh(34 + 5as/h) per layer, for Megatron-style implementations.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Planning...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 from %2, overridden here</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layouts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPT-3 175B, 1024 A100s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tp 8 × pp 8 × dp 16, batch 1536, fp16, full recompute (Narayanan et al. 2021)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Llama-2-70B, 8 H100s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tp 8 inside one node, bf16 (Megatron-LM&apos;s layout for a 70B model)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>dp %1 × pp %2 × tp %3 = %4 GPUs; the nodes have %5.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Llama-2-70B (example)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>dp %1 × pp %2 × tp %3 × cp %4 = %5 GPUs; the nodes have %6.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Time on %1 (a model, docs/ESTIMATE.md: every matmul at %2% of peak, nothing overlapped): %3 s per step, %4 tokens/s per GPU, %5 TFLOP/s per GPU, MFU %6%.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Time on %1 (the kernel model, docs/PERFORMANCE.md: GEMMs from a measured table at the sustained clock, memory-bound kernels at the measured bandwidth, data-parallel traffic overlapped; %2% of peak reached): %3 s per step, %4 tokens/s per GPU, %5 TFLOP/s per GPU, MFU %6%.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::PlannerText</name>
    <message>
        <source>GPT-3 175B (example)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Llama-2-7B (example)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>turn on activation checkpointing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>selective activation recompute</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>use DDP instead of naive DataParallel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>offload the optimizer states to the CPU (ZeRO-Offload)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>halve the micro-batch (same global batch)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>mixed precision</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No GPU chosen: the fit is not checked.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>fits: %1 free on the fullest GPU (rank %2).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>does not fit by %1 on rank %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 −%2 (then fits)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 −%2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1: no single setting saves memory; add GPUs (data-parallel ranks or pipeline stages).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1: %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>, </source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>fits, %1 free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>over by %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Micro-batch per GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPUs per node</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Optimizer offload</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Parameter offload</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Activation checkpointing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tensor-parallel ranks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Sequence parallelism</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ProcessJob</name>
    <message>
        <source>stopped</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RecordingController</name>
    <message>
        <source>Recording this run to %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot record to %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recording to %1 stopped: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recording to %1 failed: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recorded %1 events to %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot open %1: its run config is unusable: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot open recording %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Nothing to export: open a recording or record a run first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cannot export the Chrome trace to %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Exported %1 events as a Chrome trace to %2</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RingAllreduceView</name>
    <message>
        <source>Waiting for communication events: press Run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Idle: every transfer replayed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>broadcast of the parameters from rank 0</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>scatter of the tokens from rank 0</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gather of the gradients to rank 0</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>step %1 · %2 · %n transfer(s) of %3</source>
        <translation>
            <numerusform>step %1 · %2 · %n transfer of %3</numerusform>
            <numerusform>step %1 · %2 · %n transfers of %3</numerusform>
        </translation>
    </message>
    <message>
        <source>reduce-scatter</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-gather</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>step %1 · bucket %2 · %3 step %4 of %5 · %6 per chunk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>One data-parallel rank: nothing to reduce.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1: rank 0 sent %2, received %3; a DDP ring would send 2(N−1)/N × %4 = %5 per rank.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>DataParallel (naive): rank 0 scatters, broadcasts and gathers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>DDP ring all-reduce: reduce-scatter, then all-gather, per bucket</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1 sent %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>received %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>c%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>params</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>grads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>scatter (tokens)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>broadcast (parameters)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gather (gradients)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Stage:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Show the data-parallel ranks of this pipeline stage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>stage %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>step %1 · NCCL: %n all-reduce call(s) on rank %2, %3 in all, %4 ms of GPU time</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <source>NCCL runs the ring inside its kernels: its chunk transfers are not events, so none is drawn.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the flat shards</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the embeddings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the head</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>layer %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gradients</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>parameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>step %1 · %2 of the %3 of %4 · ring step %5 of %6 · %7 per chunk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-1: reduce-scatter the gradients, update the own shard, all-gather the parameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-2: reduce-scatter each unit&apos;s gradients, all-gather the updated chunks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-3: all-gather each unit for forward and backward, reduce-scatter its gradients</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Formula %1 = %2 bytes, with %3.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Parameters and gradients through rank 0: %1 bytes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes); none is a bottleneck.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>reduce-scatter (gradients)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-gather (parameters)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1 so far: each of the %2 ranks sent %3 (rank %4: %5 bytes, the mean %6 bytes).</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>%n step(s) behind the run: this step is drawn whole, then the newest.</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Skipped %n transfer(s) of earlier steps to catch up with the run.</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
</context>
<context>
    <name>shardscope::ui::RunController</name>
    <message>
        <source>the job&apos;s run config: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>stopped after step %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>unknown error</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>from the start (no checkpoint committed yet)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>resuming from %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>restart %1 of %2 after the run failed (%3); %4</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ScheduleCompareView</name>
    <message>
        <source>Not run for this layout: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Running %1 steps...</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Waiting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>idle in all %1%, fill and drain %2% · %3
peak activations per stage: %4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Compare schedules</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The panel&apos;s model, pipeline stages and micro-batches (one data-parallel replica) under each schedule, %1 training steps each on the virtual clock, in the background. Each cell draws the last step, its bubble and its peak activations: the first step also allocates the buffers, which would blur the comparison.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::TensorParallelView</name>
    <message>
        <source>Layer:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The transformer layer whose matrices and collectives are shown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run a model with Tensor-parallel ranks of 2 or more to see one layer&apos;s matrices split over the ranks.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measured: no complete micro-batch of layer %1 yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1: %2 B</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measured bytes sent per rank for layer %1 (step %2, micro-batch %3): %4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Formula per rank per layer per micro-batch: %1 = %2 B with %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-gather</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>reduce-scatter</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>collective</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>forward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>recompute</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1, %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>step %1, micro-batch %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Attention</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>W_qkv: C × 3C/t per rank
= %1 × %2, split by column</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>W_o: C/t × C per rank
= %1 × %2, split by row</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>attention:
%1 of %2 heads
per rank</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MLP</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>W_fc: C × 4C/t per rank
= %1 × %2, split by column</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>W_proj: 4C/t × C per rank
= %1 × %2, split by row</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GELU,
per rank</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>r%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>identity forward,
all-reduce backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>all-reduce forward,
identity backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tp rank %1 = rank %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layer %1 of %2 (stage %3), split over t = %4 tensor-parallel ranks %5 of data-parallel rank 0. %6 collectives of this layer seen.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This run has one tensor-parallel rank, so every layer&apos;s matrices stay whole. With Tensor-parallel ranks t of 2 or more (train --tp t), this view draws one layer&apos;s weight matrices split over the t ranks (QKV and the MLP&apos;s first linear by column, the output projection and the MLP&apos;s second linear by row), lights up each all-reduce as its event arrives, and counts its bytes against %1.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ThroughputPlot</name>
    <message>
        <source>Throughput</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>this machine&apos;s cores</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>measured host tokens/s (wall clock)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>modeled tokens/s on %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Modeled: the global batch × sequence length over the step&apos;s time on the virtual clock, the device each rank is modeled on (the GPU profile&apos;s GPU, or this machine&apos;s cores: each rank&apos;s CPU time). Not drawn on the wall clock.
Measured host: the same tokens over the step&apos;s wall time on this machine, every rank sharing its cores.
Rank r: the tokens of its data-parallel replica per step (global batch × sequence length / dp) divided by the time between the ends of r&apos;s consecutive optimizer spans, on the run&apos;s clock; dashed, in the rank&apos;s colour of the memory plot.
Every pipeline stage of a replica sees all of its tokens; a slow rank falls below the others.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>modeled on %1
(virtual clock)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tokens/s: modeled,
measured host</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tokens/s (wall clock)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>measured host
(wall clock)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::WaitsView</name>
    <message>
        <source>rank %1 (slow)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>forward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>backward</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>optimizer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>waiting (→ r: for that rank)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1 waited %2 ms for rank %3 (%4)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1: %2, %3 ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>last completed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The optimizer step to draw</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A rank that reaches a collective or a receive before the others idles until they get there. On the virtual clock the communicator reports each wait with the rank it waited for, passing that name on round the ring, so a straggler is named by every rank it holds up.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Each rank&apos;s compute, and the time it waited for another rank at a collective or a receive (none yet).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1: the ranks waited %2 ms in all; %3% of it for rank %4.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Its compute takes %1× as long (straggler setting %2:%1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rank %1 failed at step %2: %3.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>shardscope::ui::ZeroView</name>
    <message>
        <source>shard %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>emb</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>head</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>L%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Waiting for events: press Run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Step %1, all ranks: %2 gathers, %3 releases, %4 reduce-scatters, %5 all-gathers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>parameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gradients</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>not held</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>gathered / active just now</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>active just now</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Each unit is split into %1 chunks; data-parallel rank r owns chunk r (outlined).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 gathered now</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 reduce-scatters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 all-gathers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO: this run&apos;s model is unknown to the engine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-0 (replicated): %1 per rank · Nd = %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-1: %1 per rank · Nd = %2 (optimizer states sharded)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-2: %1 per rank · Nd = %2 (+ gradients sharded)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>ZeRO-3: %1 per rank · Nd = %2 (+ parameters sharded)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>P %1 · G %2 · OS %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>%1 (plan)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Each rank holds only its pipeline stage&apos;s units; the last stage keeps a copy of the tied token embedding (emb) for its head.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>rank %1 · stage %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>tp %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tensor parallelism: each row is one tp rank&apos;s slice, 1/%1 of every layer&apos;s split matrices; the %2 data-parallel ranks with the same tp rank each hold that slice whole.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tensor parallelism: each row is one tp rank&apos;s slice, 1/%1 of every layer&apos;s split matrices; ZeRO shards that slice over the %2 data-parallel ranks with the same tp rank.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
