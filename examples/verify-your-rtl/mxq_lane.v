// mxq_lane: one lane of mxq_bf16_fp4_k4 (docs/verify-your-rtl.md): a bf16 value and the block's
// E8M0 scale in, the fp4_e2m1 code of value / 2^(scale - 127) out, rounded to nearest, ties to
// even, saturating at 6.0 (docs/numerics.md, section 3, steps 4 and 5).  Combinational.
//
// fp4_e2m1 codes are S EE M: exponent field 0 is the subnormal 0.M (0 or 0.5), fields 1..3
// are 1.M * 2^(EE - 1), so the magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7), and the
// magnitude code counts grid steps: rounding up is "code + 1", carries included.
module mxq_lane (
  input  wire [15:0] x,      // bf16
  input  wire [7:0]  scale,  // the block's scale (a finite block's: 0..252)
  output wire [3:0]  code    // fp4_e2m1
);
  wire       sign = x[15];
  wire [7:0] exp_field = x[14:7];
  wire [6:0] man = x[6:0];
  wire       is_zero = (x[14:0] == 15'd0);

  // Normalize: |x| = 1.frac * 2^(nexp - 127).  A bf16 subnormal (exponent field 0) is
  // 0.man * 2^-126; its leading one sets nexp = (position of that one) - 6 <= 0.
  reg signed [9:0] nexp;
  reg        [6:0] frac;
  always @* begin
    if (exp_field != 8'd0) begin
      nexp = {2'b00, exp_field};
      frac = man;
    end else begin
      casez (man)
        7'b1??????: begin nexp =  10'sd0; frac = {man[5:0], 1'b0}; end
        7'b01?????: begin nexp = -10'sd1; frac = {man[4:0], 2'b0}; end
        7'b001????: begin nexp = -10'sd2; frac = {man[3:0], 3'b0}; end
        7'b0001???: begin nexp = -10'sd3; frac = {man[2:0], 4'b0}; end
        7'b00001??: begin nexp = -10'sd4; frac = {man[1:0], 5'b0}; end
        7'b000001?: begin nexp = -10'sd5; frac = {man[0],   6'b0}; end
        default:    begin nexp = -10'sd6; frac = 7'b0;             end  // 7'b0000001 (or zero)
      endcase
    end
  end

  // The scaled value q = x / 2^(scale - 127) = 1.frac * 2^qexp.  qexp <= 2 because the scale
  // was taken from the block's largest magnitude (|q| < 8).
  wire signed [9:0] qexp = nexp - $signed({2'b00, scale});

  // Truncate |q| to the fp4 grid: the code below |q| (kept), the first dropped bit (guard)
  // and the OR of all later dropped bits (sticky).
  reg [2:0] kept;
  reg       guard, sticky;
  always @* begin
    if (qexp >= 0) begin
      // 1 <= |q| < 8: a normal code, exponent field qexp + 1 and one mantissa bit.
      kept   = {qexp[1:0] + 2'd1, frac[6]};
      guard  = frac[5];
      sticky = |frac[4:0];
    end else if (qexp == -10'sd1) begin
      // 0.5 <= |q| < 1: the subnormal 0.5 (code 1) and below it frac.
      kept   = 3'd1;
      guard  = frac[6];
      sticky = |frac[5:0];
    end else if (qexp == -10'sd2) begin
      // 0.25 <= |q| < 0.5: code 0; the leading one is the guard bit.
      kept   = 3'd0;
      guard  = 1'b1;
      sticky = |frac;
    end else begin
      // |q| < 0.25: below half of the smallest step, rounds to 0.
      kept   = 3'd0;
      guard  = 1'b0;
      sticky = 1'b1;
    end
  end

  // Round to nearest, ties to even: up if more than half a step was dropped, or exactly half
  // and the kept code is odd.
  wire round_up = guard & (sticky | kept[0]);

  // Rounding up past 6.0 (code 7 + 1) saturates to 6.0.
  wire [3:0] rounded = {1'b0, kept} + {3'b000, round_up};
  wire [2:0] magnitude = is_zero ? 3'd0 : rounded[3] ? 3'd7 : rounded[2:0];

  assign code = {sign, magnitude};
endmodule
