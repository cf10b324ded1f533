// Simulation-only bulk-stimulus wrapper for @dut@ (generated from tb/bulk_wrapper.v; not synthesizable).
module @top@ #(
  parameter integer DEPTH = @depth@
) (
  input  wire              clk,
  input  wire              rst,
  input  wire              osc_en,   // 1: run on the internal oscillator (needs --timing)
  // pass-through stream ports (bulk = 0)
  input  wire [@wi@-1:0]   i__payload,
  input  wire              i__valid,
  output wire              i__ready,
  output wire [@wo@-1:0]   o__payload,
  output wire              o__valid,
  input  wire              o__ready,
  // bulk engine
  input  wire              bulk,
  input  wire              start,
  input  wire [31:0]       count,      // payloads to send
  input  wire [31:0]       out_count,  // outputs expected (= count for one-in-one-out units)
  input  wire [15:0]       drain,      // cycles to keep accepting after the last expected output
  input  wire [31:0]       seed,
  input  wire [7:0]        idle_thresh,
  input  wire [7:0]        stall_thresh,
  output reg               done,
  output reg               load_error, // the stimulus file was missing or short
  output reg  [31:0]       cycles,     // clock cycles from start to the last expected output
  output wire [31:0]       sent,       // payloads the unit accepted
  output wire [31:0]       received    // outputs taken, extra ones (a bug) included
);
  // Bulk runs clock themselves: no VPI call per clock edge, so Verilator runs at full speed.
  // (The loop sleeps while osc_en is low, so cocotb-clocked runs pay nothing for it.)
  reg osc = 1'b0;
  always begin
    wait (osc_en);
    #5 osc = ~osc;
  end
  wire uclk = osc_en ? osc : clk;

`systemc_imp_header
#include <stdio_ext.h>
`verilog
  reg [@wi@-1:0] stim [0:DEPTH-1];
  reg [@wo@-1:0] resp [0:DEPTH-1];
  reg [8*256-1:0] stim_file, out_file;
  initial begin
    if (!$value$plusargs("stim=%s", stim_file)) stim_file = "bulk_stim.bin";
    if (!$value$plusargs("out=%s", out_file)) out_file = "bulk_out.bin";
  end

  integer fd, got;
  reg running, draining, v_hold;
  reg [15:0] drain_left;
  reg [31:0] in_idx, out_idx, lfsr_v, lfsr_r;
  wire b_valid = running && in_idx < count && (v_hold || lfsr_v[7:0] >= idle_thresh);
  // while draining, ready stays high so an extra output shows up in `received` at once
  wire b_ready = running && (draining || lfsr_r[7:0] >= stall_thresh);
  assign sent = in_idx;
  assign received = out_idx;

  wire d_i_ready, d_o_valid;
  wire [@wo@-1:0] d_o_payload;
  @dut@ dut (
    .@clk@(uclk), .@rst@(rst),
    .@i_payload@(bulk ? stim[in_idx[@abits@-1:0]] : i__payload),
    .@i_valid@(bulk ? b_valid : i__valid),
    .@i_ready@(d_i_ready),
    .@o_payload@(d_o_payload),
    .@o_valid@(d_o_valid),
    .@o_ready@(bulk ? b_ready : o__ready)
  );
  assign i__ready = d_i_ready;
  assign o__payload = d_o_payload;
  assign o__valid = d_o_valid;

  function automatic [31:0] xorshift(input [31:0] x);
    reg [31:0] y;
    begin
      y = x ^ (x << 13);
      y = y ^ (y >> 17);
      xorshift = y ^ (y << 5);
    end
  endfunction

  always @(posedge uclk) begin
    if (rst) begin
      running <= 1'b0;
      draining <= 1'b0;
      drain_left <= 16'd0;
      done <= 1'b0;
      load_error <= 1'b0;
      v_hold <= 1'b0;
      cycles <= 32'd0;
      in_idx <= 32'd0;
      out_idx <= 32'd0;
      lfsr_v <= 32'd1;
      lfsr_r <= 32'd2;
    end else if (start) begin
      // A failed load is reported, not fatal: before the testbench first drives them, the
      // inputs hold random values (--x-initial unique), and a spurious `start` must not end
      // the simulation; the reset that follows clears it.
      got = 0;
      if (count != 0) begin
        fd = $fopen(stim_file, "rb");
        if (fd != 0) begin
`ifdef VERILATOR
          // $fread takes one fgetc per byte, and glibc locks the FILE on each call once the
          // process has a second thread (the testbench's worker does): this file is ours alone.
          $c("__fsetlocking(VL_CVT_I_FP(", fd, "), FSETLOCKING_BYCALLER);");
`endif
          got = $fread(stim, fd, 0, count);
          $fclose(fd);
        end
      end
      load_error <= got != count * @nbytes@;
      running <= count != 0 && got == count * @nbytes@;
      draining <= 1'b0;
      drain_left <= drain;
      done <= count == 0 || got != count * @nbytes@;
      v_hold <= 1'b0;
      cycles <= 32'd0;
      in_idx <= 32'd0;
      out_idx <= 32'd0;
      lfsr_v <= seed | 32'd1;
      lfsr_r <= (seed ^ 32'h9e3779b9) | 32'd1;
    end else if (running) begin
      lfsr_v <= xorshift(lfsr_v);
      lfsr_r <= xorshift(lfsr_r);
      v_hold <= b_valid && !d_i_ready;  // stream rule: valid holds until the transfer
      if (b_valid && d_i_ready) in_idx <= in_idx + 32'd1;
      if (d_o_valid && b_ready) begin
        if (out_idx < out_count) resp[out_idx[@abits@-1:0]] <= d_o_payload;
        out_idx <= out_idx + 32'd1;
      end
      if (!draining) begin
        cycles <= cycles + 32'd1;
        draining <= out_idx >= out_count;
      end else if (drain_left != 0) begin
        drain_left <= drain_left - 16'd1;
      end else begin
        fd = $fopen(out_file, "wb");
        if (fd == 0) $fatal(1, "bulk: cannot write %0s", out_file);
        for (got = 0; got < out_count; got = got + 1) $fwrite(fd, "%u", resp[got]);
        $fclose(fd);
        running <= 1'b0;
        done <= 1'b1;
      end
    end
  end
endmodule

`ifdef MX_BULK_MAIN
// Stand-alone top for `verilator --binary -DMX_BULK_MAIN`: no cocotb needed.
module @top@_main;
  reg clk = 1'b0, rst = 1'b1, start = 1'b0;
  reg [31:0] n = 32'd0, seed = 32'd1, idle = 32'd0, stall = 32'd0;
  wire done, load_error;
  wire [31:0] cycles, sent, received;
  wire i_ready, o_valid;
  wire [@wo@-1:0] o_payload;
  always #5 clk = ~clk;
  @top@ bulk (
    .clk(clk), .rst(rst), .osc_en(1'b0), .i__payload(@wi@'d0), .i__valid(1'b0), .i__ready(i_ready),
    .o__payload(o_payload), .o__valid(o_valid), .o__ready(1'b0), .bulk(1'b1), .start(start),
    .count(n), .out_count(n), .drain(16'd16), .seed(seed), .idle_thresh(idle[7:0]),
    .stall_thresh(stall[7:0]), .done(done), .load_error(load_error), .cycles(cycles), .sent(sent),
    .received(received)
  );
  initial begin
    if (!$value$plusargs("n=%d", n)) n = 32'd0;
    if (!$value$plusargs("seed=%d", seed)) seed = 32'd1;
    if (!$value$plusargs("idle=%d", idle)) idle = 32'd0;
    if (!$value$plusargs("stall=%d", stall)) stall = 32'd0;
    repeat (4) @(posedge clk);
    rst = 1'b0;
    @(negedge clk) start = 1'b1;
    @(negedge clk) start = 1'b0;
    wait (done);
    if (load_error) $fatal(1, "bulk: cannot load %0d payloads from the stimulus file", n);
    $display("bulk: %0d payloads through @dut@ in %0d cycles", n, cycles);
    if (sent != n || received != n)
      $fatal(1, "bulk: %0d of %0d payloads taken, %0d outputs", sent, n, received);
    $finish;
  end
endmodule
`endif
