// A user's design around an MX quantizer that FuseSoC generates (see mx_user.core).
// The unit's module name encodes its configuration; its JSON sidecar (in the generated core's
// sidecar fileset) gives the ports and the bit fields of each payload.
module mx_user (
    input  wire        clk,
    input  wire        rst,
    input  wire [63:0] in_values,  // four bf16 values, value i at bits [16*i +: 16]
    input  wire        in_valid,
    output wire        in_ready,
    output wire [7:0]  out_scale,  // E8M0 shared scale
    output wire [15:0] out_codes,  // four fp4_e2m1 codes, code i at bits [4*i +: 4]
    output wire        out_valid,
    input  wire        out_ready
);
    mx_quantizer_fp4_e2m1_k4_bf16_rne_floor_s3 quantizer (
        .clk(clk),
        .rst(rst),
        .i__payload(in_values),
        .i__valid(in_valid),
        .i__ready(in_ready),
        .o__payload({out_codes, out_scale}),
        .o__valid(out_valid),
        .o__ready(out_ready)
    );
endmodule
