// mxq_bf16_fp4_k4: a small hand-written MX quantizer (worked example of docs/verify-your-rtl.md).
//
// One block of four bf16 values in, one E8M0 shared scale and four fp4_e2m1 element codes out,
// per the OCP MX v1.0 rules as this project reads them (docs/numerics.md, section 3):
// scale from the block's largest magnitude ("floor" mode), elements rounded to nearest, ties
// to even, saturating at 6.0.  The modes are fixed: there are no runtime mode inputs.
//
// Interface: a valid/ready stream in and out, one block per clock, latency 2.
//   stage 1 (s1_*): the block maximum and the scale;
//   stage 2 (out_*): the four element codes (mxq_lane, one per lane).
// Both stages move together ("advance"): the pipeline holds still while the output holds a
// block the sink does not take, so in_ready depends combinationally on out_ready.
// Reset is synchronous, active high, and empties the pipeline.
module mxq_bf16_fp4_k4 (
  input  wire        clk,
  input  wire        rst,
  input  wire        in_valid,
  output wire        in_ready,
  input  wire [63:0] in_data,    // lane i: bf16 bits in_data[16*i +: 16]
  output reg         out_valid,
  input  wire        out_ready,
  output wire [23:0] out_block   // {scale, codes}: the E8M0 scale in bits [23:16] (value
                                 // 2^(scale - 127), 255 = NaN block), lane i's fp4_e2m1
                                 // code in bits [4*i +: 4]
);
  localparam [7:0] SCALE_NAN = 8'd255;
  localparam [7:0] FP4_EMAX = 8'd2;  // fp4_e2m1's largest binade is [4, 8)

  wire advance = out_ready | ~out_valid;
  assign in_ready = advance;

  // ---- stage 1: block maximum and shared scale -------------------------------------------
  // floor mode: shared exponent e = floor(log2(amax)) - emax, clamped to >= -127, and the
  // scale code is e + 127.  Only amax's exponent field matters, and the largest magnitude has
  // the largest exponent field, so stage 1 takes the maximum of the four exponent fields.
  // For a normal amax the scale is that field minus emax = 2; a subnormal or zero amax
  // (field 0) and fields 1 and 2 all clamp to 0 (e <= -127).  The upper clamp (e <= 127)
  // cannot be reached from bf16.
  wire [7:0] exp0 = in_data[14:7];
  wire [7:0] exp1 = in_data[30:23];
  wire [7:0] exp2 = in_data[46:39];
  wire [7:0] exp3 = in_data[62:55];
  wire [7:0] max01 = (exp0 > exp1) ? exp0 : exp1;
  wire [7:0] max23 = (exp2 > exp3) ? exp2 : exp3;
  wire [7:0] max_exp = (max01 > max23) ? max01 : max23;

  // Any NaN or Inf (exponent field all ones) makes the whole block NaN.
  wire non_finite = (&exp0) | (&exp1) | (&exp2) | (&exp3);

  wire [7:0] scale = non_finite ? SCALE_NAN
                   : (max_exp >= FP4_EMAX) ? max_exp - FP4_EMAX
                   : 8'd0;

  reg        s1_valid;
  reg [63:0] s1_data;
  reg [7:0]  s1_scale;

  always @(posedge clk) begin
    if (rst) begin
      s1_valid <= 1'b0;
    end else if (advance) begin
      s1_valid <= in_valid;
    end
    if (advance) begin
      s1_data  <= in_data;
      s1_scale <= scale;
    end
  end

  // ---- stage 2: element codes ------------------------------------------------------------
  wire [15:0] lane_codes;
  genvar i;
  generate
    for (i = 0; i < 4; i = i + 1) begin : g_lane
      mxq_lane u_lane (
        .x     (s1_data[16*i +: 16]),
        .scale (s1_scale),
        .code  (lane_codes[4*i +: 4])
      );
    end
  endgenerate

  reg [7:0]  out_scale;
  reg [15:0] out_codes;
  assign out_block = {out_scale, out_codes};

  always @(posedge clk) begin
    if (rst) begin
      out_valid <= 1'b0;
    end else if (advance) begin
      out_valid <= s1_valid;
    end
    if (advance) begin
      out_scale <= s1_scale;
      // scale 255 only comes from a non-finite block (a finite one is at most 252): all codes 0
      out_codes <= (s1_scale == SCALE_NAN) ? 16'h0000 : lane_codes;
    end
  end
endmodule
