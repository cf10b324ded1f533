// Behavioural model of the Lattice ECP5 MULT18X18D, the subset hw/dsp.py instantiates: an
// 18 x 18 multiplier with optional A/B input registers and output register, each on CLK0 with
// a clock enable (CE0..CE3) of its choice.  For simulation, lint and the proofs only:
// synthesis for ECP5 takes the vendor block (yosys knows it as a black box), so this file is
// never synthesized.
//
// Written from the MULT18X18D parameters (Lattice, ECP5 and ECP5-5G sysDSP Usage Guide,
// FPGA-TN-02205): P = A * B, each factor signed where SIGNEDA/SIGNEDB is 1; REG_*_CLK "NONE"
// leaves a stage combinational.  Not modelled (elaboration fails if asked for): another
// clock than CLK0, the pipeline register, asynchronous reset, the cascade and shift inputs
// (SOURCEA/SOURCEB, SRIA/SRIB) and the registered sign controls.  Not modelled either: the
// resets RST0..RST3, which hw/dsp.py ties low (the registers stand for the pipeline's data
// registers, which have no reset).
module MULT18X18D (A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0, B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0, C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
    SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0,
    RST3, RST2, RST1, RST0, P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0);
  input A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0;
  input B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0;
  input C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0;
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0;
  input CE3, CE2, CE1, CE0, RST3, RST2, RST1, RST0;
  output P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0;
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTA_CE = "CE0";
  parameter REG_INPUTA_RST = "RST0";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_INPUTB_CE = "CE0";
  parameter REG_INPUTB_RST = "RST0";
  parameter REG_INPUTC_CLK = "NONE";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_OUTPUT_CLK = "NONE";
  parameter REG_OUTPUT_CE = "CE0";
  parameter REG_OUTPUT_RST = "RST0";
  parameter GSR = "ENABLED";
  parameter CAS_MATCH_REG = "FALSE";
  parameter SOURCEB_MODE = "B_SHIFT";
  parameter MULT_BYPASS = "DISABLED";
  parameter RESETMODE = "SYNC";

  wire [3:0] ce = {CE3, CE2, CE1, CE0};
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};

  // "CEn" -> n
  function integer select;
    input [8*4-1:0] name;
    select = name[7:0] - "0";
  endfunction

  generate
    if ((REG_INPUTA_CLK != "NONE" && REG_INPUTA_CLK != "CLK0")
        || (REG_INPUTB_CLK != "NONE" && REG_INPUTB_CLK != "CLK0")
        || (REG_OUTPUT_CLK != "NONE" && REG_OUTPUT_CLK != "CLK0")
        || REG_INPUTC_CLK != "NONE" || REG_PIPELINE_CLK != "NONE" || RESETMODE != "SYNC"
        || MULT_BYPASS != "DISABLED" || CAS_MATCH_REG != "FALSE" || SOURCEB_MODE != "B_SHIFT"
        || (GSR != "ENABLED" && GSR != "DISABLED")
        || REG_INPUTA_RST[31:8] != "RST" || REG_INPUTB_RST[31:8] != "RST"
        || REG_OUTPUT_RST[31:8] != "RST") begin : gen_unsupported
      MULT18X18D_model_does_not_cover_these_parameters unsupported ();
    end
  endgenerate

  reg [17:0] a_reg = 18'h0, b_reg = 18'h0;
  reg [35:0] p_reg = 36'h0;
  always @(posedge CLK0) begin
    if (ce[select(REG_INPUTA_CE)]) a_reg <= a;
    if (ce[select(REG_INPUTB_CE)]) b_reg <= b;
  end
  wire [17:0] a_in = REG_INPUTA_CLK == "NONE" ? a : a_reg;
  wire [17:0] b_in = REG_INPUTB_CLK == "NONE" ? b : b_reg;
  wire [35:0] a_ext = {{18{SIGNEDA & a_in[17]}}, a_in};
  wire [35:0] b_ext = {{18{SIGNEDB & b_in[17]}}, b_in};
  wire [35:0] product = a_ext * b_ext;
  always @(posedge CLK0)
    if (ce[select(REG_OUTPUT_CE)]) p_reg <= product;
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = REG_OUTPUT_CLK == "NONE" ? product : p_reg;
endmodule
